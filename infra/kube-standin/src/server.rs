//! The HTTP server and the `StandIn` handle tests drive it with.

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::faults::{self, Fault, FaultKind, Faults};
use crate::logs::{LogKey, Logs};
use crate::rbac::{self, RbacUse, Tokens, Uses};
use crate::sim::{self, Simulation};
use crate::verbs::State;
use crate::{handlers, knobs, persist};

/// How to run a stand-in.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where to listen; port 0 picks a free one.
    pub addr: SocketAddr,
    /// How often watches that allow bookmarks get one.
    pub bookmark_interval: Duration,
    /// How many change events are kept for watches to resume from; older resourceVersions get
    /// `410 Gone`.
    pub history_limit: usize,
    /// Simulate kube-controller-manager: Deployments get ReplicaSets and pods, Jobs get a pod,
    /// and their status is kept as on a real cluster without nodes (pods stay `Pending`).
    pub simulate_controllers: bool,
    /// Simulate a kubelet (for local dev runs): pods start about a second after they appear,
    /// on the node `standin-node`, with simulated logs; Job pods then succeed.
    pub simulate_kubelet: bool,
    /// Load the objects from this file at start if it exists, and save them to it after
    /// changes (at most every 500 ms) and on shutdown.
    pub state_file: Option<PathBuf>,
    /// Serve validating admission policies (`admissionregistration.k8s.io/v1`
    /// ValidatingAdmissionPolicy and its bindings, enforced), as Kubernetes
    /// 1.30 and later do. Off: as 1.28 and 1.29 without the feature gate
    /// (the group is not served at all).
    pub admission_policies: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            bookmark_interval: Duration::from_secs(5),
            history_limit: 10_000,
            simulate_controllers: false,
            simulate_kubelet: false,
            state_file: None,
            admission_policies: true,
        }
    }
}

/// Shared by every request handler and the handle.
#[derive(Clone)]
pub struct App {
    state: Arc<Mutex<State>>,
    pub(crate) logs: Logs,
    pub(crate) faults: Faults,
    /// ServiceAccount tokens issued through the TokenRequest API.
    pub(crate) tokens: Tokens,
    /// What RBAC let ServiceAccounts do.
    pub(crate) rbac_uses: Uses,
    reachability: Arc<Reachability>,
    addr: SocketAddr,
    bookmark_interval: Duration,
}

impl App {
    /// The API state. Never held across an `.await`.
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub(crate) fn bookmark_interval(&self) -> Duration {
        self.bookmark_interval
    }

    pub(crate) async fn set_unreachable(&self, unreachable: bool) -> io::Result<()> {
        self.reachability.set(unreachable).await
    }

    pub(crate) fn set_namespace_deletion_delay(&self, delay: Duration) {
        let mut state = self.state();
        state.namespace_deletion_delay = delay;
        state.settle();
    }
}

/// Lets delayed namespace deletions finish when their time comes: nothing
/// else would settle the state then.
async fn namespace_ticks(app: App) {
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let mut state = app.state();
        if !state.namespace_deletion_delay.is_zero() {
            state.settle();
        }
    }
}

/// Switches the API listener off and on.
struct Reachability {
    /// `true` while the server should be unreachable.
    wanted: watch::Sender<bool>,
    /// `true` while the listener is accepting.
    listening: watch::Receiver<bool>,
}

impl Reachability {
    async fn set(&self, unreachable: bool) -> io::Result<()> {
        self.wanted.send_replace(unreachable);
        let mut listening = self.listening.clone();
        let reached = tokio::time::timeout(
            Duration::from_secs(10),
            listening.wait_for(|l| *l != unreachable),
        )
        .await;
        match reached {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err(io::Error::other("the server has stopped")),
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the listener did not switch in time",
            )),
        }
    }
}

async fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    // The server closes connections first when going unreachable, leaving TIME_WAIT sockets
    // that must not keep it from listening on the same port again.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

async fn serve_connection(stream: TcpStream, router: Router) {
    let _ = stream.set_nodelay(true);
    let service = TowerToHyperService::new(router);
    if let Err(e) = auto::Builder::new(TokioExecutor::new())
        .serve_connection_with_upgrades(TokioIo::new(stream), service)
        .await
    {
        tracing::trace!("connection ended: {e}");
    }
}

/// Accepts connections while reachable; when told to go unreachable, closes the listener and
/// every open connection (watches included), and rebinds the same address when told to come back.
async fn accept_loop(
    mut listener: Option<TcpListener>,
    addr: SocketAddr,
    router: Router,
    mut wanted: watch::Receiver<bool>,
    listening: watch::Sender<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        if *wanted.borrow_and_update() {
            listener = None;
            connections.abort_all();
            while connections.join_next().await.is_some() {}
            listening.send_replace(false);
            if wanted.changed().await.is_err() {
                return;
            }
            continue;
        }
        let Some(l) = &listener else {
            match bind(addr).await {
                Ok(l) => {
                    listener = Some(l);
                    listening.send_replace(true);
                }
                Err(e) => {
                    tracing::warn!("rebinding {addr}: {e}; retrying");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            continue;
        };
        tokio::select! {
            accepted = l.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(stream, router.clone()));
                }
                Err(e) => {
                    tracing::warn!("accept: {e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            changed = wanted.changed() => if changed.is_err() { return },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// A running stand-in API server. Dropping it stops the server.
pub struct StandIn {
    app: App,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    state_file: Option<PathBuf>,
}

impl StandIn {
    /// Starts a stand-in on a free port of 127.0.0.1.
    pub async fn start() -> io::Result<StandIn> {
        Self::start_with(Config::default()).await
    }

    pub async fn start_with(config: Config) -> io::Result<StandIn> {
        let mut state = State::new(config.history_limit);
        if !config.admission_policies {
            state.registry.withdraw_group(crate::admission::GROUP);
        }
        if let Some(path) = &config.state_file
            && persist::load(&mut state, path)?
        {
            tracing::info!("state loaded from {}", path.display());
        }
        let listener = bind(config.addr).await?;
        let addr = listener.local_addr()?;
        let (wanted_tx, wanted_rx) = watch::channel(false);
        let (listening_tx, listening_rx) = watch::channel(true);
        let app = App {
            state: Arc::new(Mutex::new(state)),
            logs: Logs::default(),
            faults: Faults::default(),
            tokens: Tokens::default(),
            rbac_uses: Uses::default(),
            reachability: Arc::new(Reachability {
                wanted: wanted_tx,
                listening: listening_rx,
            }),
            addr,
            bookmark_interval: config.bookmark_interval,
        };
        let router = Router::new()
            .fallback(handlers::dispatch)
            // The API server takes request bodies of up to 3 MiB.
            .layer(DefaultBodyLimit::max(3 << 20))
            .layer(middleware::from_fn_with_state(
                app.faults.clone(),
                faults::inject,
            ))
            .merge(knobs::routes())
            .with_state(app.clone());
        let task = tokio::spawn(accept_loop(
            Some(listener),
            addr,
            router,
            wanted_rx,
            listening_tx,
        ));
        let mut tasks = vec![task, tokio::spawn(namespace_ticks(app.clone()))];
        if config.simulate_controllers || config.simulate_kubelet {
            let simulation = Simulation {
                controllers: config.simulate_controllers,
                kubelet: config.simulate_kubelet,
            };
            tasks.push(tokio::spawn(sim::run(app.clone(), simulation)));
        }
        if let Some(path) = &config.state_file {
            tasks.push(tokio::spawn(persist::run_saver(app.clone(), path.clone())));
        }
        tracing::info!("kube stand-in listening on http://{addr}");
        Ok(StandIn {
            app,
            tasks: Mutex::new(tasks),
            state_file: config.state_file,
        })
    }

    /// Also serves the `/_standin` knobs on a second address, which stays reachable while the
    /// API is made unreachable. Returns the address bound.
    pub async fn start_control_listener(&self, addr: SocketAddr) -> io::Result<SocketAddr> {
        let listener = TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let router = knobs::routes().with_state(self.app.clone());
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::error!("control listener: {e}");
            }
        });
        self.lock_tasks().push(task);
        Ok(local)
    }

    fn lock_tasks(&self) -> MutexGuard<'_, Vec<JoinHandle<()>>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn addr(&self) -> SocketAddr {
        self.app.addr
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.app.addr)
    }

    /// A kubeconfig whose current context (`standin`) points at this server.
    pub fn kubeconfig_yaml(&self) -> String {
        kubeconfig_yaml(&self.url())
    }

    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> io::Result<()> {
        std::fs::write(path, self.kubeconfig_yaml())
    }

    /// Makes the next `n` API requests fail in the given way.
    pub fn fail_next(&self, n: usize, kind: FaultKind) {
        self.app.faults.add(Fault::new(kind, n));
    }

    /// Arms a fault, possibly restricted to a method or a path.
    pub fn add_fault(&self, fault: Fault) {
        self.app.faults.add(fault);
    }

    /// Faults still armed, with the number of requests each will still hit.
    pub fn pending_faults(&self) -> Vec<Fault> {
        self.app.faults.pending()
    }

    pub fn clear_faults(&self) {
        self.app.faults.clear();
    }

    /// Unreachable: the listener is closed and every connection dropped, so clients get
    /// connection errors. Reachable again: listens on the same address. Returns once switched.
    pub async fn set_unreachable(&self, unreachable: bool) -> io::Result<()> {
        self.app.set_unreachable(unreachable).await
    }

    /// Sets what a container has logged (replacing anything set before).
    pub fn set_pod_logs(&self, key: LogKey, lines: impl IntoIterator<Item = impl Into<String>>) {
        self.app.logs.set(key, lines);
    }

    /// Appends to what a container has logged; `follow` readers see the new lines.
    pub fn append_pod_logs(&self, key: LogKey, lines: impl IntoIterator<Item = impl Into<String>>) {
        self.app.logs.append(key, lines);
    }

    /// Binds a pod to the stand-in's node, as the scheduler's binding does
    /// (`spec.nodeName`, which no update may change), so that its log can be
    /// read; nothing else about it changes. False when there is no such pod.
    pub fn bind_pod(&self, namespace: &str, name: &str) -> bool {
        let mut state = self.app.state();
        let key = crate::store::ObjKey::new("", "pods", namespace, name);
        let Some(pod) = state.store.get(&key).cloned() else {
            return false;
        };
        let mut bound = (*pod).clone();
        bound["spec"]["nodeName"] = serde_json::json!(sim::NODE_NAME);
        state.put_raw(key, bound);
        true
    }

    /// Restarts a container's log as a kubelet does: what it logged becomes
    /// the `previous` log (timestamps kept), the new instance's is empty. The
    /// pod's `restartCount` is the test's to report, as a kubelet would.
    pub fn restart_pod_logs(&self, key: LogKey) {
        self.app.logs.restart(key);
    }

    /// Keeps every namespace deleted from now on `Terminating` for `delay`
    /// after its deletion began (its contents still go at once), as a real
    /// cluster's busy namespace controller does; zero restores the default.
    pub fn set_namespace_deletion_delay(&self, delay: Duration) {
        self.app.set_namespace_deletion_delay(delay);
    }

    /// Forgets the watch history, like an etcd compaction: watches resuming from any version
    /// before now get `410 Gone`.
    pub fn compact_history(&self) {
        self.app.state().compact();
    }

    /// Every permission a ServiceAccount has used so far (a request RBAC let
    /// through), once each: what a role needs, as far as the callers went.
    pub fn rbac_uses(&self) -> Vec<RbacUse> {
        self.app.rbac_uses.all()
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.app.state().store.current_rv()
    }

    /// Stops the server now (dropping the handle does the same), saving the state file if
    /// there is one.
    pub fn shutdown(self) {}
}

impl Drop for StandIn {
    fn drop(&mut self) {
        for task in self.lock_tasks().drain(..) {
            task.abort();
        }
        // The last changes may be younger than the saver's debounce.
        if let Some(path) = &self.state_file
            && let Err(e) = persist::save(&self.app, path)
        {
            tracing::error!("saving the state to {}: {e}", path.display());
        }
    }
}

/// A kubeconfig for `server`, with a `standin` cluster, user (token auth) and current context.
/// Its token may do everything; see [`rbac`](crate::rbac) for the others.
pub fn kubeconfig_yaml(server: &str) -> String {
    let token = rbac::ADMIN_TOKEN;
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: standin
  cluster:
    server: {server}
users:
- name: standin
  user:
    token: {token}
contexts:
- name: standin
  context:
    cluster: standin
    user: standin
    namespace: default
current-context: standin
preferences: {{}}
"
    )
}
