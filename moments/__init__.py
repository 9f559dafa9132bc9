"""The math kernel: exact Gaussian and Wishart moments, symbolic in the sizes, no torch."""
