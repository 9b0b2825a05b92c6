//! Synthetic data.
