//! A real authoritative DNS server on loopback (hickory-server, UDP and TCP
//! on one free port) for the domain check, serving zone `example.test.`:
//!
//! | name | record |
//! |---|---|
//! | `gw.example.test` | A 192.0.2.10 — the gateway hostname |
//! | `shop.example.test` | CNAME `gw.example.test` |
//! | `alias.example.test` | CNAME `shop.example.test` (a two-hop chain) |
//! | `apex.example.test` | A 192.0.2.10 — a gateway address |
//! | `v6.example.test` | AAAA 2001:db8::99 — not the gateway |
//! | `split.example.test` | A 192.0.2.10 and A 203.0.113.9 |
//! | `elsewhere.example.test` | A 203.0.113.9 |
//! | `txt.example.test` | only a TXT record |
//! | anything under `hang.example.test` | never answered |
//!
//! Any other name is NXDOMAIN.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use hickory_server::Server;
use hickory_server::net::runtime::{Time, TokioRuntimeProvider};
use hickory_server::proto::rr::rdata::{A, AAAA, CNAME, SOA, TXT};
use hickory_server::proto::rr::{LowerName, Name, RData, Record, RecordType, RrKey};
use hickory_server::server::{Request, RequestHandler, ResponseHandler, ResponseInfo};
use hickory_server::store::in_memory::InMemoryZoneHandler;
use hickory_server::zone_handler::{AxfrPolicy, Catalog, ZoneType};
use tokio::net::{TcpListener, UdpSocket};

pub const GATEWAY_HOSTNAME: &str = "gw.example.test";
pub const GATEWAY_ADDRESS: &str = "192.0.2.10";
const ZONE: &str = "example.test.";
const HANG: &str = "hang.example.test.";

/// The running server; it stops with the test's runtime.
pub struct TestDns {
    /// Where it answers, over UDP and TCP.
    pub address: SocketAddr,
    zone: Arc<InMemoryZoneHandler<TokioRuntimeProvider>>,
    _server: Server<Handler>,
}

/// The zone's answers, except under [`HANG`], where a query is read and
/// never answered (as by a firewalled or dead name server).
struct Handler {
    catalog: Catalog,
}

#[async_trait::async_trait]
impl RequestHandler for Handler {
    async fn handle_request<R: ResponseHandler, T: Time>(
        &self,
        request: &Request,
        response_handle: R,
    ) -> ResponseInfo {
        let hangs = request
            .request_info()
            .is_ok_and(|info| info.query.name().to_string().ends_with(HANG));
        if hangs {
            return std::future::pending().await;
        }
        self.catalog
            .handle_request::<R, T>(request, response_handle)
            .await
    }
}

fn name(text: &str) -> Name {
    Name::from_str(text).expect("a valid test name")
}

fn record(owner: &str, data: RData) -> Record {
    Record::from_rdata(name(owner), 60, data)
}

fn zone() -> InMemoryZoneHandler<TokioRuntimeProvider> {
    let serial = 1;
    let mut zone = InMemoryZoneHandler::<TokioRuntimeProvider>::empty(
        name(ZONE),
        ZoneType::Primary,
        AxfrPolicy::Deny,
    );
    let gateway: Ipv4Addr = GATEWAY_ADDRESS.parse().unwrap();
    let elsewhere: Ipv4Addr = "203.0.113.9".parse().unwrap();
    for record in [
        record(
            ZONE,
            RData::SOA(SOA::new(
                name("ns.example.test."),
                name("hostmaster.example.test."),
                serial,
                3600,
                600,
                86_400,
                60,
            )),
        ),
        record("gw.example.test.", RData::A(A(gateway))),
        record(
            "shop.example.test.",
            RData::CNAME(CNAME(name("gw.example.test."))),
        ),
        record(
            "alias.example.test.",
            RData::CNAME(CNAME(name("shop.example.test."))),
        ),
        record("apex.example.test.", RData::A(A(gateway))),
        record(
            "v6.example.test.",
            RData::AAAA(AAAA("2001:db8::99".parse().unwrap())),
        ),
        record("split.example.test.", RData::A(A(gateway))),
        record("split.example.test.", RData::A(A(elsewhere))),
        record("elsewhere.example.test.", RData::A(A(elsewhere))),
        record(
            "txt.example.test.",
            RData::TXT(TXT::new(vec!["hello".into()])),
        ),
    ] {
        assert!(zone.upsert_mut(record, serial), "a test record is accepted");
    }
    zone
}

impl TestDns {
    /// Publishes a TXT record at `owner` (a name under `example.test`,
    /// without the root's dot) holding `value`, answered from the next query.
    pub async fn publish_txt(&self, owner: &str, value: &str) {
        let record = record(
            &format!("{owner}."),
            RData::TXT(TXT::new(vec![value.to_owned()])),
        );
        assert!(
            self.zone.upsert(record, 1).await,
            "{owner}: a TXT record is accepted"
        );
    }

    /// Withdraws every TXT record at `owner`.
    pub async fn withdraw_txt(&self, owner: &str) {
        let key = RrKey::new(LowerName::from(name(&format!("{owner}."))), RecordType::TXT);
        self.zone.records_mut().await.remove(&key);
    }

    pub async fn start() -> Self {
        let zone = Arc::new(zone());
        let handler = Handler {
            catalog: {
                let mut catalog = Catalog::new();
                catalog.upsert(LowerName::from(name(ZONE)), vec![zone.clone()]);
                catalog
            },
        };
        // A free UDP port, then TCP on the same port (taken by chance: retry).
        for _ in 0..20 {
            let udp = UdpSocket::bind((IpAddr::from(Ipv4Addr::LOCALHOST), 0))
                .await
                .expect("binding a UDP socket on loopback");
            let address = udp.local_addr().unwrap();
            let Ok(tcp) = TcpListener::bind(address).await else {
                continue;
            };
            let mut server = Server::new(handler);
            server.register_socket(udp);
            server.register_listener(tcp, Duration::from_secs(5), 64);
            return Self {
                address,
                zone,
                _server: server,
            };
        }
        panic!("no free port for both UDP and TCP on 127.0.0.1");
    }
}
