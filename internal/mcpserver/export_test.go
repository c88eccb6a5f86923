package mcpserver

// BoundListings sets the bytes of listings s remembers (maxListingBytes
// otherwise), so that a test evicts without megabytes of lists.
func BoundListings(s *Server, bytes int) { s.agg.maxBytes = bytes }

// Remembered is the number and bytes of the listings s remembers.
func Remembered(s *Server) (listings, bytes int) { return s.agg.remembered() }
