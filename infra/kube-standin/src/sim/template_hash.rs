//! `pod-template-hash`: names a Deployment's ReplicaSet after its pod template.
//!
//! The real controller hashes the Go struct with FNV-32a and spells the decimal number in the
//! `SafeEncodeString` alphabet. The stand-in hashes a canonical JSON form instead (keys
//! sorted), so the values differ from a real cluster's but look the same and are just as
//! stable: the same template always gives the same hash. The number is zero-padded to 10
//! digits so the hash is always 10 characters.

use serde_json::Value;

/// The alphabet of `rand.SafeEncodeString`: no vowels, no look-alike digits.
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

pub fn template_hash(template: &Value) -> String {
    let mut hasher = Fnv32a::default();
    write_canonical(template, &mut hasher);
    format!("{:010}", hasher.0)
        .bytes()
        .map(|b| ALPHABET[b as usize % ALPHABET.len()] as char)
        .collect()
}

struct Fnv32a(u32);

impl Default for Fnv32a {
    fn default() -> Self {
        Fnv32a(0x811c_9dc5)
    }
}

impl Fnv32a {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u32::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0193);
        }
    }
}

/// JSON with object keys sorted, whatever order the map keeps them in.
fn write_canonical(v: &Value, out: &mut Fnv32a) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.write(b"{");
            for k in keys {
                out.write(Value::String(k.clone()).to_string().as_bytes());
                out.write(b":");
                write_canonical(&map[k], out);
                out.write(b",");
            }
            out.write(b"}");
        }
        Value::Array(items) => {
            out.write(b"[");
            for item in items {
                write_canonical(item, out);
                out.write(b",");
            }
            out.write(b"]");
        }
        other => out.write(other.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stable_and_shaped_like_the_real_one() {
        let a = json!({"metadata": {"labels": {"app": "web", "tier": "x"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}});
        let b = json!({"spec": {"containers": [{"image": "nginx", "name": "web"}]}, "metadata": {"labels": {"tier": "x", "app": "web"}}});
        let h = template_hash(&a);
        assert_eq!(h, template_hash(&b));
        assert_eq!(h.len(), 10);
        assert!(h.bytes().all(|c| ALPHABET.contains(&c)));
        let c = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web", "image": "nginx:2"}]}});
        assert_ne!(h, template_hash(&c));
    }
}
