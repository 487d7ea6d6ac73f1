"""Live sessions: leaf pointers, safe appends, busy detection, pending writes, save points."""
