//go:build !linux

package port

// openTreeStore: no per-user state directory srtd keeps here, so the
// written trees are this process's only (writtenTrees.mem).
func openTreeStore(string) (treeStore, error) { return nil, nil }
