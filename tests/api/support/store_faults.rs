//! Fault injection for the real DynamoDB client: the next requests of a named
//! operation fail before they are sent, as a broken connection would. Nothing
//! is mocked; every other request reaches DynamoDB Local.

use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;

/// Per fault: the operation, how many of its requests still pass before it
/// fails, and how many then fail.
#[derive(Debug, Clone, Default)]
pub struct StoreFaults(Arc<Mutex<Vec<(String, u32, u32)>>>);

impl StoreFaults {
    /// Makes the next `count` requests of `operation` (e.g. `Query`) fail.
    pub fn fail_next(&self, operation: &str, count: u32) {
        self.fail_after(operation, 0, count);
    }

    /// Lets `pass` requests of `operation` through, then fails `count`.
    pub fn fail_after(&self, operation: &str, pass: u32, count: u32) {
        self.0
            .lock()
            .unwrap()
            .push((operation.to_owned(), pass, count));
    }

    /// Ends every injected fault.
    pub fn heal(&self) {
        self.0.lock().unwrap().clear();
    }
}

impl Intercept for StoreFaults {
    fn name(&self) -> &'static str {
        "StoreFaults"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(operation) = cfg.load::<Metadata>().map(|m| m.name().to_owned()) else {
            return Ok(());
        };
        let mut faults = self.0.lock().unwrap();
        if let Some(fault) = faults
            .iter_mut()
            .find(|(name, _, left)| *name == operation && *left > 0)
        {
            if fault.1 > 0 {
                fault.1 -= 1;
                return Ok(());
            }
            fault.2 -= 1;
            return Err(format!("injected fault: {operation} failed").into());
        }
        Ok(())
    }
}
