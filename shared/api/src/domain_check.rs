//! The domain check (`checkAppDomains`): does each of an app's hostnames
//! resolve to the gateway?
//!
//! Each hostname is looked up with a stub resolver (hickory) against the
//! configured name servers (`BERTH_DNS_SERVERS`, else the system's): its
//! CNAME chain, followed hop by hop, and its A and AAAA records, all at once
//! and all hostnames concurrently, everything for one hostname bounded by
//! [`LOOKUP_TIMEOUT`]. What was found is then judged by [`judge`], a pure
//! function of the gateway and the answers.
//!
//! Only the apps and cleanup functions enable this module (feature `dns`), and the
//! resolver is built on the first check, not at start, so cold starts of the
//! other operations do not pay for it.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{
    ConnectionConfig, NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts,
};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::net::{DnsError, NetError};
use hickory_resolver::proto::op::ResponseCode;
use hickory_resolver::proto::rr::{Name, RData, RecordType};
use tokio::sync::OnceCell;
use tokio::time::{Instant, timeout_at};

use crate::ApiError;
use crate::config::Config;
use berth_records::apps::record::{CertificateCheck, DomainCheck, DomainVerification};

/// The bound on everything one hostname's check waits for.
pub const LOOKUP_TIMEOUT: Duration = Duration::from_secs(2);

/// How many CNAME hops are followed: more is a misconfiguration (or a loop).
const MAX_CNAME_HOPS: usize = 8;

/// The message of every entry when there is nothing to compare with.
pub const NO_GATEWAY: &str = "no gateway is configured (BERTH_GATEWAY_HOSTNAME or \
                              BERTH_GATEWAY_ADDRESSES), so this name cannot be checked";

/// Where app domains should point.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gateway {
    /// Lowercase, without a trailing dot.
    pub hostname: Option<String>,
    pub addresses: Vec<IpAddr>,
}

impl Gateway {
    pub fn is_configured(&self) -> bool {
        self.hostname.is_some() || !self.addresses.is_empty()
    }

    /// The `expected` of every entry.
    pub fn expected(&self) -> Vec<String> {
        self.hostname
            .iter()
            .cloned()
            .chain(self.addresses.iter().map(IpAddr::to_string))
            .collect()
    }
}

/// What the lookups of one hostname found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolution {
    /// The CNAME chain from the hostname, in order (lowercase, no trailing dot).
    pub cnames: Vec<String>,
    /// The A and AAAA addresses at the end of the chain.
    pub addresses: Vec<IpAddr>,
    /// The name itself does not exist.
    pub nxdomain: bool,
    /// A lookup got no answer within [`LOOKUP_TIMEOUT`].
    pub timed_out: bool,
    /// A lookup failed otherwise: why, in words.
    pub failed: Option<String>,
}

impl Resolution {
    /// The `records` of the entry: the chain, then the addresses.
    pub fn records(&self) -> Vec<String> {
        self.cnames
            .iter()
            .cloned()
            .chain(self.addresses.iter().map(IpAddr::to_string))
            .collect()
    }
}

/// Whether the name points at the gateway, and one sentence saying why.
///
/// It does when its CNAME chain reaches the gateway hostname (whatever that
/// resolves to today), or when it has addresses and every one of them is a
/// gateway address (an address elsewhere would send part of the traffic
/// elsewhere). Anything that went wrong in a lookup, other than a chain that
/// already reached the gateway, makes the answer not ok: a missing AAAA
/// answer could hide an address elsewhere.
pub fn judge(gateway: &Gateway, found: &Resolution) -> (bool, String) {
    if !gateway.is_configured() {
        return (false, NO_GATEWAY.to_owned());
    }
    if let Some(hostname) = &gateway.hostname
        && found.cnames.iter().any(|cname| cname == hostname)
    {
        return (true, "points at the gateway".to_owned());
    }
    if found.timed_out {
        return (false, "the DNS lookup timed out".to_owned());
    }
    if let Some(why) = &found.failed {
        return (false, format!("the DNS lookup failed: {why}"));
    }
    if !found.addresses.is_empty() {
        let elsewhere: Vec<String> = found
            .addresses
            .iter()
            .filter(|address| !gateway.addresses.contains(address))
            .map(IpAddr::to_string)
            .collect();
        return if elsewhere.is_empty() {
            (true, "points at the gateway".to_owned())
        } else if elsewhere.len() < found.addresses.len() {
            (
                false,
                format!(
                    "resolves to {} besides the gateway, so some requests would miss it",
                    elsewhere.join(", ")
                ),
            )
        } else {
            (
                false,
                format!("resolves to {}, not the gateway", elsewhere.join(", ")),
            )
        };
    }
    if let Some(last) = found.cnames.last() {
        return (
            false,
            format!("is an alias of {last}, which has no address and is not the gateway"),
        );
    }
    if found.nxdomain {
        return (false, "no such name (NXDOMAIN)".to_owned());
    }
    (false, "the name has no CNAME, A or AAAA record".to_owned())
}

/// The domain check of one process: the gateway, and the resolver built on
/// first use and kept for the life of the process (it holds no cache: a
/// fixed record shows at the next check).
#[derive(Debug)]
pub struct DomainChecker {
    gateway: Gateway,
    servers: Vec<SocketAddr>,
    resolver: OnceCell<TokioResolver>,
}

impl DomainChecker {
    pub fn new(config: &Config) -> Self {
        Self {
            gateway: Gateway {
                hostname: config.gateway_hostname.clone(),
                addresses: config.gateway_addresses.clone(),
            },
            servers: config.dns_servers.clone(),
            resolver: OnceCell::new(),
        }
    }

    /// One entry per hostname, in the given order, each with its
    /// certificate's standing (`certificate_of`) and its proof's
    /// (`verification_of`).
    pub async fn check(
        &self,
        hostnames: &[String],
        certificate_of: impl Fn(&str) -> CertificateCheck,
        verification_of: impl Fn(&str) -> DomainVerification,
    ) -> Result<Vec<DomainCheck>, ApiError> {
        if hostnames.is_empty() {
            return Ok(Vec::new());
        }
        let resolver = self
            .resolver
            .get_or_try_init(|| async { self.build() })
            .await?;
        let expected = self.gateway.expected();
        let checks = hostnames.iter().map(|hostname| async {
            let found = resolve(resolver, hostname).await;
            let (ok, message) = judge(&self.gateway, &found);
            DomainCheck {
                hostname: hostname.clone(),
                ok,
                records: found.records(),
                expected: expected.clone(),
                message,
                certificate: certificate_of(hostname),
                verification: verification_of(hostname),
            }
        });
        Ok(futures::future::join_all(checks).await)
    }

    /// Whether `name` has a TXT record holding exactly `value` (a record's
    /// strings joined, as RFC 7208 reads a long one), within [`LOOKUP_TIMEOUT`].
    pub async fn txt_holds(&self, name: &str, value: &str) -> Result<TxtFinding, ApiError> {
        let resolver = self
            .resolver
            .get_or_try_init(|| async { self.build() })
            .await?;
        let Ok(name) = Name::from_ascii(format!("{name}.")) else {
            return Ok(TxtFinding::Missing);
        };
        let deadline = Instant::now() + LOOKUP_TIMEOUT;
        Ok(
            match lookup(resolver, name, RecordType::TXT, deadline).await {
                Answer::Records(records) => {
                    let holds = records.iter().any(|record| match record {
                        RData::TXT(txt) => {
                            let joined: Vec<u8> = txt.txt_data.iter().flatten().copied().collect();
                            joined == value.as_bytes()
                        }
                        _ => false,
                    });
                    if holds {
                        TxtFinding::Found
                    } else {
                        TxtFinding::Missing
                    }
                }
                Answer::NxDomain | Answer::NoData => TxtFinding::Missing,
                Answer::TimedOut => TxtFinding::Unknown("the DNS lookup timed out".to_owned()),
                Answer::Failed(why) => TxtFinding::Unknown(format!("the DNS lookup failed: {why}")),
            },
        )
    }

    fn build(&self) -> Result<TokioResolver, ApiError> {
        let mut builder = if self.servers.is_empty() {
            TokioResolver::builder_tokio().map_err(|e| {
                ApiError::Internal(format!("reading the system's DNS configuration: {e}"))
            })?
        } else {
            let servers = self
                .servers
                .iter()
                .map(|server| {
                    let with_port = |mut connection: ConnectionConfig| {
                        connection.port = server.port();
                        connection
                    };
                    NameServerConfig::new(
                        server.ip(),
                        true,
                        vec![
                            with_port(ConnectionConfig::udp()),
                            with_port(ConnectionConfig::tcp()),
                        ],
                    )
                })
                .collect();
            TokioResolver::builder_with_config(
                ResolverConfig::from_name_servers(servers),
                TokioRuntimeProvider::default(),
            )
        };
        let options: &mut ResolverOpts = builder.options_mut();
        options.timeout = LOOKUP_TIMEOUT;
        // No answers kept between checks: someone fixing a record checks again
        // at once and must see the fix, not a cached NXDOMAIN.
        options.cache_size = 0;
        // The check is about public DNS; /etc/hosts of the function says nothing.
        options.use_hosts_file = ResolveHosts::Never;
        // CNAME records are the evidence of the first rule.
        options.preserve_intermediates = true;
        builder
            .build()
            .map_err(|e| ApiError::Internal(format!("building the DNS resolver: {e}")))
    }
}

/// What a lookup of a domain's proof found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxtFinding {
    /// The record holds the value.
    Found,
    /// The name server answered, without the value.
    Missing,
    /// No answer to go by (why, in words): nothing is concluded.
    Unknown(String),
}

/// What one lookup said.
enum Answer {
    Records(Vec<RData>),
    NxDomain,
    NoData,
    TimedOut,
    Failed(String),
}

async fn lookup(
    resolver: &TokioResolver,
    name: Name,
    kind: RecordType,
    deadline: Instant,
) -> Answer {
    match timeout_at(deadline, resolver.lookup(name, kind)).await {
        Err(_elapsed) => Answer::TimedOut,
        Ok(Ok(found)) => Answer::Records(found.answers().iter().map(|r| r.data.clone()).collect()),
        Ok(Err(error)) => classify(&error),
    }
}

fn classify(error: &NetError) -> Answer {
    match error {
        NetError::Timeout => Answer::TimedOut,
        NetError::Dns(DnsError::NoRecordsFound(none))
            if none.response_code == ResponseCode::NXDomain =>
        {
            Answer::NxDomain
        }
        NetError::Dns(DnsError::NoRecordsFound(_)) => Answer::NoData,
        NetError::Dns(DnsError::ResponseCode(code)) => Answer::Failed(format!(
            "the name server answered {}",
            match code {
                ResponseCode::ServFail => "SERVFAIL".to_owned(),
                ResponseCode::Refused => "REFUSED".to_owned(),
                other => other.to_str().to_lowercase(),
            }
        )),
        other => {
            // The error may name the name servers' addresses: logged, not answered.
            tracing::info!(error = %other, "a DNS lookup failed");
            Answer::Failed("no name server gave an answer".to_owned())
        }
    }
}

fn name_text(name: &Name) -> String {
    name.to_ascii().trim_end_matches('.').to_ascii_lowercase()
}

/// The chain of CNAMEs from `start`, one query per hop, until a name that is
/// not an alias. The answer that ended the walk is returned with the chain.
async fn cname_chain(
    resolver: &TokioResolver,
    start: Name,
    deadline: Instant,
) -> (Vec<Name>, Answer) {
    let mut chain: Vec<Name> = Vec::new();
    let mut current = start;
    for _ in 0..MAX_CNAME_HOPS {
        let answer = lookup(resolver, current.clone(), RecordType::CNAME, deadline).await;
        let Answer::Records(records) = &answer else {
            return (chain, answer);
        };
        let next = records.iter().find_map(|record| match record {
            RData::CNAME(target) => Some(target.0.clone()),
            _ => None,
        });
        match next {
            Some(target) if !chain.iter().any(|seen| seen.eq_ignore_root_case(&target)) => {
                chain.push(target.clone());
                current = target;
            }
            // Not an alias, or a loop: the chain ends here.
            _ => return (chain, answer),
        }
    }
    (chain, Answer::NoData)
}

/// The CNAME chain and the addresses of `hostname`, within [`LOOKUP_TIMEOUT`].
async fn resolve(resolver: &TokioResolver, hostname: &str) -> Resolution {
    let mut found = Resolution::default();
    // Fully qualified: the search domains of resolv.conf must not apply.
    let name = match Name::from_ascii(format!("{hostname}.")) {
        Ok(name) => name,
        Err(_) => {
            found.failed = Some("the hostname is not a valid DNS name".to_owned());
            return found;
        }
    };
    let deadline = Instant::now() + LOOKUP_TIMEOUT;
    let ((chain, chain_end), v4, v6) = tokio::join!(
        cname_chain(resolver, name.clone(), deadline),
        lookup(resolver, name.clone(), RecordType::A, deadline),
        lookup(resolver, name, RecordType::AAAA, deadline),
    );
    found.cnames = chain.iter().map(name_text).collect();
    // The first hop's answer says whether the name exists at all; the address
    // lookups answer NXDOMAIN also for an alias of a missing name.
    let missing = chain.is_empty() && matches!(chain_end, Answer::NxDomain);
    for answer in [chain_end, v4, v6] {
        match answer {
            Answer::Records(records) => {
                for record in records {
                    match record {
                        RData::A(a) => push_new(&mut found.addresses, IpAddr::V4(a.0)),
                        RData::AAAA(aaaa) => push_new(&mut found.addresses, IpAddr::V6(aaaa.0)),
                        // The address lookups follow the chain too; a hop the
                        // walk could not see (it timed out) still counts.
                        RData::CNAME(target) => push_new(&mut found.cnames, name_text(&target.0)),
                        _ => {}
                    }
                }
            }
            Answer::NxDomain | Answer::NoData => {}
            Answer::TimedOut => found.timed_out = true,
            Answer::Failed(why) => {
                found.failed.get_or_insert(why);
            }
        }
    }
    found.nxdomain = missing && found.cnames.is_empty() && found.addresses.is_empty();
    found
}

fn push_new<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gateway(hostname: Option<&str>, addresses: &[&str]) -> Gateway {
        Gateway {
            hostname: hostname.map(str::to_owned),
            addresses: addresses.iter().map(|a| a.parse().unwrap()).collect(),
        }
    }

    fn found(cnames: &[&str], addresses: &[&str]) -> Resolution {
        Resolution {
            cnames: cnames.iter().map(|c| (*c).to_owned()).collect(),
            addresses: addresses.iter().map(|a| a.parse().unwrap()).collect(),
            ..Resolution::default()
        }
    }

    const BOTH: (Option<&str>, &[&str]) = (Some("gw.example.net"), &["192.0.2.10", "2001:db8::10"]);

    #[test]
    fn a_cname_chain_reaching_the_gateway_hostname_is_ok() {
        let gw = gateway(BOTH.0, BOTH.1);
        // Directly, or through another alias; whatever the gateway resolves to.
        for chain in [
            &["gw.example.net"][..],
            &["cdn.example.org", "gw.example.net"],
        ] {
            let (ok, message) = judge(&gw, &found(chain, &["198.51.100.1"]));
            assert!(ok, "{chain:?}");
            assert_eq!(message, "points at the gateway");
        }
        // Even when an address lookup then timed out.
        let mut timed_out = found(&["gw.example.net"], &[]);
        timed_out.timed_out = true;
        assert!(judge(&gw, &timed_out).0);
        // A chain elsewhere is not enough, even with only the hostname configured.
        let only_hostname = gateway(Some("gw.example.net"), &[]);
        let (ok, message) = judge(
            &only_hostname,
            &found(&["other.example.org"], &["198.51.100.1"]),
        );
        assert!(!ok);
        assert_eq!(message, "resolves to 198.51.100.1, not the gateway");
    }

    #[test]
    fn addresses_are_ok_only_when_all_are_the_gateways() {
        let gw = gateway(BOTH.0, BOTH.1);
        for addresses in [
            &["192.0.2.10"][..],
            &["2001:db8::10"],
            &["192.0.2.10", "2001:db8::10"],
        ] {
            assert_eq!(
                judge(&gw, &found(&[], addresses)),
                (true, "points at the gateway".to_owned()),
                "{addresses:?}"
            );
        }
        assert_eq!(
            judge(&gw, &found(&[], &["203.0.113.9"])),
            (false, "resolves to 203.0.113.9, not the gateway".to_owned())
        );
        assert_eq!(
            judge(&gw, &found(&[], &["192.0.2.10", "2001:db8::99"])),
            (
                false,
                "resolves to 2001:db8::99 besides the gateway, so some requests would miss it"
                    .to_owned()
            )
        );
        // Only a hostname configured: addresses never match.
        assert!(
            !judge(
                &gateway(Some("gw.example.net"), &[]),
                &found(&[], &["192.0.2.10"])
            )
            .0
        );
    }

    #[test]
    fn failures_and_missing_names() {
        let gw = gateway(BOTH.0, BOTH.1);
        let mut missing = found(&[], &[]);
        missing.nxdomain = true;
        assert_eq!(
            judge(&gw, &missing),
            (false, "no such name (NXDOMAIN)".to_owned())
        );
        assert_eq!(
            judge(&gw, &found(&[], &[])),
            (false, "the name has no CNAME, A or AAAA record".to_owned())
        );
        let mut slow = found(&[], &["192.0.2.10"]);
        slow.timed_out = true;
        assert_eq!(
            judge(&gw, &slow),
            (false, "the DNS lookup timed out".to_owned())
        );
        let mut failed = found(&[], &[]);
        failed.failed = Some("the name server answered SERVFAIL".into());
        assert_eq!(
            judge(&gw, &failed),
            (
                false,
                "the DNS lookup failed: the name server answered SERVFAIL".to_owned()
            )
        );
        assert_eq!(
            judge(&gw, &found(&["dangling.example.org"], &[])),
            (
                false,
                "is an alias of dangling.example.org, which has no address and is not the gateway"
                    .to_owned()
            )
        );
    }

    #[test]
    fn without_a_gateway_nothing_is_ok() {
        let none = Gateway::default();
        assert!(none.expected().is_empty());
        for resolution in [found(&["gw.example.net"], &[]), found(&[], &["192.0.2.10"])] {
            assert_eq!(judge(&none, &resolution), (false, NO_GATEWAY.to_owned()));
        }
    }

    #[test]
    fn expected_and_records_list_names_first() {
        let gw = gateway(BOTH.0, BOTH.1);
        assert_eq!(
            gw.expected(),
            ["gw.example.net", "192.0.2.10", "2001:db8::10"]
        );
        assert_eq!(
            found(&["a.example.org", "gw.example.net"], &["192.0.2.10"]).records(),
            ["a.example.org", "gw.example.net", "192.0.2.10"]
        );
    }
}
