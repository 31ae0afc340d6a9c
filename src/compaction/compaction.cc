namespace harness {}  // placeholder until the compaction module lands
