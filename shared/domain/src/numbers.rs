//! Bounded numbers: ports, replica counts and volume group ids.
//! Each parses from the `i64` a JSON body carries.

use std::fmt;

use super::Invalid;

/// A TCP port a process listens on: 1 to 65535.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Port(u16);

impl Port {
    pub fn parse(value: i64) -> Result<Self, Invalid> {
        match u16::try_from(value) {
            Ok(port) if port >= 1 => Ok(Self(port)),
            _ => Err(Invalid::new("must be a port number from 1 to 65535")),
        }
    }

    pub fn get(self) -> u16 {
        self.0
    }
}

impl From<Port> for i32 {
    /// Kubernetes' type for ports.
    fn from(port: Port) -> i32 {
        i32::from(port.0)
    }
}

impl fmt::Display for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A number of replicas of a process: 0 to 100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Replicas(i32);

impl Replicas {
    pub const MAX: i32 = 100;

    pub fn parse(value: i64) -> Result<Self, Invalid> {
        if (0..=i64::from(Self::MAX)).contains(&value) {
            Ok(Self(value as i32))
        } else {
            Err(Invalid::new(format!(
                "must be a number of replicas from 0 to {}",
                Self::MAX
            )))
        }
    }

    /// The count, in Kubernetes' type for replicas.
    pub fn get(self) -> i32 {
        self.0
    }
}

impl fmt::Display for Replicas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The group id owning an app's volumes (a pod's `fsGroup`): 1 to 2147483647.
/// 0, which removes it, is the caller's business.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FsGroup(i64);

impl FsGroup {
    pub const MAX: i64 = i32::MAX as i64;

    pub fn parse(value: i64) -> Result<Self, Invalid> {
        if (1..=Self::MAX).contains(&value) {
            Ok(Self(value))
        } else {
            Err(Invalid::new(format!(
                "must be a group id from 1 to {}",
                Self::MAX
            )))
        }
    }

    /// The id, in Kubernetes' type for `fsGroup`.
    pub fn get(self) -> i64 {
        self.0
    }
}

impl fmt::Display for FsGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports() {
        for good in [1, 80, 443, 8080, 65535] {
            let port = Port::parse(good).unwrap();
            assert_eq!(i64::from(port.get()), good);
            assert_eq!(i64::from(i32::from(port)), good);
            assert_eq!(port.to_string(), good.to_string());
        }
        for bad in [0, -1, 65536, 100_000, i64::MIN, i64::MAX] {
            let err = Port::parse(bad).unwrap_err();
            assert_eq!(err.0, "must be a port number from 1 to 65535");
        }
        assert!(Port::parse(80).unwrap() < Port::parse(443).unwrap());
    }

    #[test]
    fn replicas() {
        for good in [0, 1, 3, 99, 100] {
            let replicas = Replicas::parse(good).unwrap();
            assert_eq!(i64::from(replicas.get()), good);
            assert_eq!(replicas.to_string(), good.to_string());
        }
        for bad in [-1, 101, 1000, i64::from(i32::MAX) + 1, i64::MIN, i64::MAX] {
            let err = Replicas::parse(bad).unwrap_err();
            assert_eq!(err.0, "must be a number of replicas from 0 to 100");
        }
        assert!(Replicas::parse(2).unwrap() < Replicas::parse(10).unwrap());
    }

    #[test]
    fn fs_groups() {
        for good in [1, 1000, 65534, 2_147_483_647] {
            let group = FsGroup::parse(good).unwrap();
            assert_eq!(group.get(), good);
            assert_eq!(group.to_string(), good.to_string());
        }
        for bad in [0, -1, 2_147_483_648, i64::MIN, i64::MAX] {
            let err = FsGroup::parse(bad).unwrap_err();
            assert_eq!(err.0, "must be a group id from 1 to 2147483647");
        }
    }
}
