"""One module per `Match` kind of the rule schema: each compiles its part of the pack into lookup
tables once, and holds the node-level test the analyzer's single walk calls."""
