package spectask

// SetPageSize sets the tasks/list page size, so tests can page through few tasks.
func SetPageSize(s *Service, n int) { s.pageSize = n }
