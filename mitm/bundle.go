package mitm

// TrustBundle returns the PEM trust bundle the sandboxed command is
// pointed at: ca's certificate first, then the host's roots, then the
// CERTIFICATE blocks of each extra file (a missing or unreadable extra
// file, or one without a CERTIFICATE block, is skipped, as the reference
// 0.0.83 does). Only CERTIFICATE blocks are ever copied.
func TrustBundle(ca *CA, extraPaths []string) ([]byte, error) { return nil, errNotImplemented }
