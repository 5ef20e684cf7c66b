//! The whole grade path against a naive reference model, on random inputs.
