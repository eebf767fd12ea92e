"""Results: the model every output is rendered from (Measurement, KernelStats, VerifyReport, Cell,
ResultSet), its versioned JSON schema, and the metadata a saved run carries. The bottom of the output side."""
