namespace harness {}  // placeholder
