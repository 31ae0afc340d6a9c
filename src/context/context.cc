namespace harness {}  // placeholder until the context module lands
