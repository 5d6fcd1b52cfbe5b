//! `kube-standin`: runs the stand-in Kubernetes API server until killed.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use berth_kube_standin::{Config, StandIn};

const USAGE: &str = "usage: kube-standin [--addr 127.0.0.1:6443] [--kubeconfig-out PATH] [--control-addr ADDR] [--bookmark-interval-secs N]
                    [--simulate-controllers] [--simulate-kubelet] [--state-file PATH]

Serves a stand-in Kubernetes API over plain HTTP until killed.
  --addr ADDR                 where to listen (default 127.0.0.1:6443; port 0 picks one)
  --kubeconfig-out PATH       write a kubeconfig (context `standin`) for the server there
  --control-addr ADDR         also serve the /_standin test knobs here; this listener stays up
                              while the API is made unreachable
  --bookmark-interval-secs N  how often watches get BOOKMARK events (default 5)
  --simulate-controllers      Deployments get ReplicaSets and pods, Jobs a pod, with the status
                              kube-controller-manager writes (pods stay Pending: no node)
  --simulate-kubelet          pods start after about a second on node standin-node, with
                              simulated logs; Job pods then succeed (for local dev runs)
  --state-file PATH           load the objects from PATH if it exists; save them there after
                              changes and on shutdown
Logging: RUST_LOG (e.g. RUST_LOG=berth_kube_standin=debug).";

struct Args {
    config: Config,
    kubeconfig_out: Option<PathBuf>,
    control_addr: Option<SocketAddr>,
}

fn parse_args() -> Result<Args, String> {
    let mut config = Config {
        addr: SocketAddr::from(([127, 0, 0, 1], 6443)),
        ..Config::default()
    };
    let mut kubeconfig_out = None;
    let mut control_addr = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let (flag, inline) = match flag.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (flag, None),
        };
        match flag.as_str() {
            "-h" | "--help" => return Err(String::new()),
            "--simulate-controllers" => {
                config.simulate_controllers = true;
                continue;
            }
            "--simulate-kubelet" => {
                config.simulate_kubelet = true;
                continue;
            }
            _ => {}
        }
        let value = inline
            .or_else(|| args.next())
            .ok_or_else(|| format!("{flag} needs a value"))?;
        let addr = |v: &str| {
            v.parse::<SocketAddr>()
                .map_err(|e| format!("{flag}: {v:?}: {e}"))
        };
        match flag.as_str() {
            "--addr" => config.addr = addr(&value)?,
            "--kubeconfig-out" => kubeconfig_out = Some(PathBuf::from(value)),
            "--control-addr" => control_addr = Some(addr(&value)?),
            "--state-file" => config.state_file = Some(PathBuf::from(value)),
            "--bookmark-interval-secs" => {
                let secs: u64 = value.parse().map_err(|e| format!("{flag}: {e}"))?;
                config.bookmark_interval = Duration::from_secs(secs.max(1));
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(Args {
        config,
        kubeconfig_out,
        control_addr,
    })
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("kube-standin: {e}");
            }
            eprintln!("{USAGE}");
            return if e.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            };
        }
    };
    let standin = match StandIn::start_with(args.config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("kube-standin: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(addr) = args.control_addr {
        match standin.start_control_listener(addr).await {
            Ok(bound) => tracing::info!("test knobs on http://{bound}/_standin"),
            Err(e) => {
                eprintln!("kube-standin: cannot listen on {addr}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let Some(path) = &args.kubeconfig_out {
        if let Err(e) = standin.write_kubeconfig(path) {
            eprintln!("kube-standin: cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        tracing::info!("kubeconfig written to {}", path.display());
    }
    println!("{}", standin.url());
    shutdown_signal().await;
    tracing::info!("stopping");
    standin.shutdown();
    ExitCode::SUCCESS
}
