package analysis

import "github.com/duel-ssl/duel/internal/atomicfile"

// WriteFileAtomic writes data to path through a temporary file in the same
// directory and a rename, so that path is either the old file or the whole
// new one, never a partial write (see internal/atomicfile).
func WriteFileAtomic(path string, data []byte) error { return atomicfile.WriteFile(path, data) }
