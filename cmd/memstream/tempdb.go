package main

import "github.com/memstream/memstream/pgserver"

// tempDataDir makes a temporary data_dir for an in-process memstream.
var tempDataDir = pgserver.TempDir
