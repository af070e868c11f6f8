//! The extension module behind the Python package `metachron`.

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("VERSION", metachron::VERSION)?;
    Ok(())
}
