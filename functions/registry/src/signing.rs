//! The key the registry's tokens are signed with: an operator's secret,
//! behind one interface ([`Signer`]) with two homes (`BERTH_REGISTRY_SIGNING_KEY`):
//!
//! - `kms:KEY`: an AWS KMS asymmetric key (`ECC_NIST_P256`, usage
//!   `SIGN_VERIFY`); the private key never leaves KMS, each token costs one
//!   `kms:Sign` call, and the function's role needs `kms:Sign` and
//!   `kms:GetPublicKey` on that key alone;
//! - `file:PATH`: a PEM P-256 private key (PKCS#8 or SEC1, as `openssl
//!   genpkey`/`ecparam` write them) in a file, e.g. a Kubernetes Secret
//!   mounted into a self-hosted API, `make dev`, the tests.
//!
//! Tokens are ES256 (ECDSA P-256 with SHA-256, the signature as JOSE's
//! `r || s`), the algorithm CNCF Distribution's libtrust verifies for a
//! P-256 key; the header's `kid` is the key's libtrust id
//! ([`libtrust_key_id`]), which Distribution looks up among the public keys
//! of its `rootcertbundle` (registry/auth/token/token.go at v2.8.2,
//! `VerifySigningKey`). A rotation is two certificates in that bundle for a
//! while: see docs/deploy.md.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::{KeyUsageType, MessageType, SigningAlgorithmSpec};
use p256::ecdsa::signature::Signer as _;
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey};
use sha2::{Digest, Sha256};

/// Where the signing key is: `kms:KEY` or `file:PATH`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KeySource {
    Kms(String),
    File(PathBuf),
}

impl KeySource {
    pub fn parse(value: &str) -> Result<Self, String> {
        match value.split_once(':') {
            Some(("kms", key)) if !key.is_empty() => Ok(Self::Kms(key.to_owned())),
            Some(("file", path)) if !path.is_empty() => Ok(Self::File(PathBuf::from(path))),
            _ => Err(format!(
                "{value:?} names no signing key: use kms:KEY (an AWS KMS key id, ARN or alias) or file:PATH (a PEM P-256 private key)"
            )),
        }
    }
}

/// Why a key could not be loaded or used; never a key's material.
#[derive(Debug, thiserror::Error)]
pub enum SigningError {
    #[error("the signing key file {0} cannot be read: {1}")]
    Unreadable(String, String),
    #[error("the signing key file {0} holds no PEM P-256 private key (PKCS#8 or SEC1)")]
    NotP256(String),
    #[error("the KMS key {key} cannot be used to sign tokens: {why}")]
    KmsKey { key: String, why: String },
    #[error("KMS did not sign: {0}")]
    Kms(String),
}

/// The one interface of the signing key, wherever it lives.
#[derive(Debug)]
pub struct Signer {
    home: Home,
    /// The public key as X.509 SubjectPublicKeyInfo DER.
    public_key: Vec<u8>,
    key_id: String,
}

enum Home {
    File(p256::ecdsa::SigningKey),
    Kms {
        client: aws_sdk_kms::Client,
        key: String,
    },
}

impl std::fmt::Debug for Home {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File(_) => f.write_str("File(..)"),
            Self::Kms { key, .. } => f.debug_struct("Kms").field("key", key).finish(),
        }
    }
}

impl Signer {
    /// Loads the key (reads the file, or asks KMS for the public key and
    /// checks its spec and usage).
    pub async fn load(source: &KeySource) -> Result<Self, SigningError> {
        match source {
            KeySource::File(path) => Self::from_pem_file(path),
            KeySource::Kms(key) => {
                let config =
                    berth_api::state::aws_config()
                        .await
                        .map_err(|error| SigningError::KmsKey {
                            key: key.clone(),
                            why: error.to_string(),
                        })?;
                Self::from_kms(aws_sdk_kms::Client::new(&config), key).await
            }
        }
    }

    fn from_pem_file(path: &std::path::Path) -> Result<Self, SigningError> {
        let shown = path.display().to_string();
        let pem = std::fs::read_to_string(path)
            .map_err(|e| SigningError::Unreadable(shown.clone(), e.kind().to_string()))?;
        Self::from_pem(&pem).ok_or(SigningError::NotP256(shown))
    }

    /// A P-256 private key in PEM, PKCS#8 or SEC1 (`EC PRIVATE KEY`).
    pub fn from_pem(pem: &str) -> Option<Self> {
        let key = p256::ecdsa::SigningKey::from_pkcs8_pem(pem)
            .ok()
            .or_else(|| {
                p256::SecretKey::from_sec1_pem(pem)
                    .ok()
                    .map(p256::ecdsa::SigningKey::from)
            })?;
        let public_key = key
            .verifying_key()
            .to_public_key_der()
            .ok()?
            .as_bytes()
            .to_vec();
        Some(Self::new(Home::File(key), public_key))
    }

    pub async fn from_kms(client: aws_sdk_kms::Client, key: &str) -> Result<Self, SigningError> {
        let unusable = |why: String| SigningError::KmsKey {
            key: key.to_owned(),
            why,
        };
        let described = client
            .get_public_key()
            .key_id(key)
            .send()
            .await
            .map_err(|e| unusable(aws_sdk_kms::error::DisplayErrorContext(e).to_string()))?;
        // What the key is, by its public key itself (KMS names its spec
        // as `KeySpec`, and as the older `CustomerMasterKeySpec`): a P-256
        // key that may sign ECDSA_SHA_256.
        let public_key = described
            .public_key()
            .map(|blob| blob.as_ref().to_vec())
            .ok_or_else(|| unusable("KMS gave no public key".into()))?;
        p256::PublicKey::from_public_key_der(&public_key)
            .map_err(|_| unusable("its key spec must be ECC_NIST_P256".into()))?;
        if described.key_usage() != Some(&KeyUsageType::SignVerify)
            || !described
                .signing_algorithms()
                .contains(&SigningAlgorithmSpec::EcdsaSha256)
        {
            return Err(unusable(
                "its key usage must be SIGN_VERIFY, with ECDSA_SHA_256".into(),
            ));
        }
        Ok(Self::new(
            Home::Kms {
                client,
                key: key.to_owned(),
            },
            public_key,
        ))
    }

    fn new(home: Home, public_key: Vec<u8>) -> Self {
        let key_id = libtrust_key_id(&public_key);
        Self {
            home,
            public_key,
            key_id,
        }
    }

    /// The key's libtrust id: the JWT header's `kid`.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The public key (SubjectPublicKeyInfo DER).
    pub fn public_key(&self) -> &[u8] {
        &self.public_key
    }

    /// The ES256 signature of `message`: `r || s`, 64 bytes.
    pub async fn sign(&self, message: &[u8]) -> Result<Vec<u8>, SigningError> {
        match &self.home {
            Home::File(key) => {
                let signature: p256::ecdsa::Signature = key.sign(message);
                Ok(signature.to_bytes().to_vec())
            }
            Home::Kms { client, key } => {
                let signed = client
                    .sign()
                    .key_id(key)
                    .message(Blob::new(message))
                    .message_type(MessageType::Raw)
                    .signing_algorithm(SigningAlgorithmSpec::EcdsaSha256)
                    .send()
                    .await
                    .map_err(|e| {
                        SigningError::Kms(aws_sdk_kms::error::DisplayErrorContext(e).to_string())
                    })?;
                let der = signed
                    .signature()
                    .ok_or_else(|| SigningError::Kms("KMS gave no signature".into()))?;
                let signature = p256::ecdsa::Signature::from_der(der.as_ref())
                    .map_err(|_| SigningError::Kms("KMS gave a malformed signature".into()))?;
                Ok(signature.to_bytes().to_vec())
            }
        }
    }
}

/// libtrust's key id (github.com/docker/libtrust util.go, `keyIDFromCryptoKey`
/// and `keyIDEncode`, vendored by Distribution v2.8.2): the SHA-256 of the
/// key's SubjectPublicKeyInfo DER, its first 240 bits in base32 (RFC 4648,
/// no padding), in twelve groups of four joined by `:`.
pub fn libtrust_key_id(public_key_der: &[u8]) -> String {
    let digest = Sha256::digest(public_key_der);
    let encoded = data_encoding::BASE32_NOPAD.encode(&digest[..30]);
    encoded
        .as_bytes()
        .chunks(4)
        .map(|group| String::from_utf8_lossy(group).into_owned())
        .collect::<Vec<_>>()
        .join(":")
}

/// The signers in use, one per key source: a function loads a key once
/// (reading the file, or asking KMS for the public key) and keeps it for
/// the life of the instance.
pub async fn signer(source: &str) -> Result<Arc<Signer>, SigningError> {
    static LOADED: Mutex<Option<HashMap<String, Arc<Signer>>>> = Mutex::new(None);
    let cached = LOADED
        .lock()
        .ok()
        .and_then(|loaded| loaded.as_ref()?.get(source).cloned());
    if let Some(signer) = cached {
        return Ok(signer);
    }
    let parsed =
        KeySource::parse(source).map_err(|why| SigningError::Unreadable(source.into(), why))?;
    let signer = Arc::new(Signer::load(&parsed).await?);
    if let Ok(mut loaded) = LOADED.lock() {
        loaded
            .get_or_insert_with(HashMap::new)
            .insert(source.to_owned(), signer.clone());
    }
    Ok(signer)
}

/// A self-signed X.509 certificate of the signing key, signed by the key
/// itself (so a KMS key's never leaves KMS): what goes into the registry's
/// `rootcertbundle`. Distribution reads only its public key for a token
/// whose header names a `kid`; it is valid for `days`.
pub async fn certificate(signer: &Signer, common_name: &str, days: u32) -> Result<String, String> {
    // rcgen signs synchronously: sign its to-be-signed bytes first, then
    // hand it the signature.
    let mut params =
        rcgen::CertificateParams::new(Vec::<String>::new()).map_err(|e| e.to_string())?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, common_name);
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::minutes(5);
    params.not_after = now + time::Duration::days(i64::from(days));
    params.serial_number = Some(rcgen::SerialNumber::from_slice(
        uuid::Uuid::new_v4().as_bytes(),
    ));
    params.is_ca = rcgen::IsCa::ExplicitNoCa;
    params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
    let public = p256::PublicKey::from_public_key_der(signer.public_key())
        .map_err(|_| "the signing key is not a P-256 key".to_owned())?;
    let point = public.to_sec1_bytes().to_vec();
    // rcgen asks for the signature of the certificate's to-be-signed part;
    // the key signs it asynchronously (KMS), so the request is answered by a
    // blocking call on this runtime's thread pool.
    let key = RemoteKey {
        signer,
        point,
        handle: tokio::runtime::Handle::current(),
    };
    let certificate =
        tokio::task::block_in_place(|| params.self_signed(&key)).map_err(|e| e.to_string())?;
    Ok(certificate.pem())
}

struct RemoteKey<'a> {
    signer: &'a Signer,
    point: Vec<u8>,
    handle: tokio::runtime::Handle,
}

impl rcgen::PublicKeyData for RemoteKey<'_> {
    fn der_bytes(&self) -> &[u8] {
        &self.point
    }

    fn algorithm(&self) -> &'static rcgen::SignatureAlgorithm {
        &rcgen::PKCS_ECDSA_P256_SHA256
    }
}

impl rcgen::SigningKey for RemoteKey<'_> {
    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, rcgen::Error> {
        let raw = self
            .handle
            .block_on(self.signer.sign(message))
            .map_err(|_| rcgen::Error::RemoteKeyError)?;
        // X.509 carries ECDSA signatures in DER.
        let signature =
            p256::ecdsa::Signature::from_slice(&raw).map_err(|_| rcgen::Error::RemoteKeyError)?;
        Ok(signature.to_der().as_bytes().to_vec())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A key made with `openssl ecparam -name prime256v1 -genkey -noout`.
    pub const SEC1_KEY: &str = "-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIP3AXO3AE6V47aIzqvqUoZ+KnCroQifDwj75PHws3gHJoAoGCCqGSM49
AwEHoUQDQgAE8C36zKF2P1DBySpmpn1cSFa0NTyqsHZokNwbYWvWZcM1DbInX0zY
ecwjPza/Dbpba3QB7zmg+iwqEUiKiMmavw==
-----END EC PRIVATE KEY-----
";

    #[test]
    fn sources_are_kms_or_file() {
        assert_eq!(
            KeySource::parse("kms:alias/berth"),
            Ok(KeySource::Kms("alias/berth".into()))
        );
        assert_eq!(
            KeySource::parse("file:/etc/berth/key.pem"),
            Ok(KeySource::File("/etc/berth/key.pem".into()))
        );
        assert!(KeySource::parse("/etc/berth/key.pem").is_err());
        assert!(KeySource::parse("kms:").is_err());
    }

    #[tokio::test]
    async fn a_file_key_signs_es256_that_its_public_key_verifies() {
        use p256::ecdsa::signature::Verifier;
        let signer = Signer::from_pem(SEC1_KEY).expect("a P-256 key");
        let signature = signer.sign(b"header.claims").await.unwrap();
        assert_eq!(signature.len(), 64);
        let public = p256::ecdsa::VerifyingKey::from_public_key_der(signer.public_key()).unwrap();
        let signature = p256::ecdsa::Signature::from_slice(&signature).unwrap();
        assert!(public.verify(b"header.claims", &signature).is_ok());
        assert!(public.verify(b"header.other", &signature).is_err());
        assert!(
            Signer::from_pem(
                "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"
            )
            .is_none()
        );
    }

    #[test]
    fn key_ids_are_libtrusts() {
        let signer = Signer::from_pem(SEC1_KEY).unwrap();
        let id = signer.key_id();
        // Twelve groups of four base32 characters.
        assert_eq!(id.len(), 12 * 4 + 11);
        assert!(id.split(':').all(|group| {
            group.len() == 4
                && group
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || (b'2'..=b'7').contains(&b))
        }));
        // Computed apart from this code, from openssl's DER of the public
        // key: `openssl ec -pubout -outform DER | python3 -c 'sha256, [:30],
        // b32encode, rstrip("="), groups of 4'`.
        assert_eq!(
            id,
            "GAS3:DKA3:HUDZ:NK4E:IJY4:3SHW:4PMY:6RLW:WISY:UQ7P:UWIS:KKKG"
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_certificate_carries_the_keys_public_key() {
        let signer = Signer::from_pem(SEC1_KEY).unwrap();
        let pem = certificate(&signer, "berth registry tokens", 30)
            .await
            .unwrap();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"));
        // openssl finds its self-signature valid and its key the signer's.
        let dir = std::env::temp_dir().join(format!("berth-cert-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("cert.pem");
        std::fs::write(&file, &pem).unwrap();
        let verified = std::process::Command::new("openssl")
            .args(["verify", "-check_ss_sig", "-partial_chain", "-CAfile"])
            .arg(&file)
            .arg(&file)
            .output()
            .expect("openssl runs");
        assert!(
            verified.status.success(),
            "{}",
            String::from_utf8_lossy(&verified.stdout)
        );
        let key = std::process::Command::new("openssl")
            .args(["x509", "-noout", "-pubkey", "-in"])
            .arg(&file)
            .output()
            .unwrap();
        let public =
            p256::ecdsa::VerifyingKey::from_public_key_pem(&String::from_utf8_lossy(&key.stdout))
                .unwrap();
        assert_eq!(
            public.to_public_key_der().unwrap().as_bytes(),
            signer.public_key()
        );
    }
}
