//! A private CA and server certificates for https tests, and a local proxy that
//! records what passes through it.

use std::sync::{Arc, Mutex};

use edge_operator::sim::{AdminAccess, RunningSim, ServerTls, Sim, SimDocument, spawn_sim_with};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A certificate authority that no system trusts.
pub(crate) struct PrivateCa {
    pub(crate) pem: String,
    issuer: Issuer<'static, KeyPair>,
}

/// A server's certificate (PEM) and key (PEM).
pub(crate) struct ServerIdentity {
    pub(crate) cert_pem: String,
    pub(crate) key_pem: String,
}

impl ServerIdentity {
    pub(crate) fn tls(&self) -> ServerTls {
        ServerTls::from_pem(self.cert_pem.as_bytes(), self.key_pem.as_bytes()).expect("valid server identity")
    }
}

impl PrivateCa {
    pub(crate) fn new(name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let key = KeyPair::generate().expect("CA key");
        let pem = params.self_signed(&key).expect("CA certificate").pem();
        Self {
            pem,
            issuer: Issuer::new(params, key),
        }
    }

    /// A server certificate for `hosts` (names or IP addresses).
    pub(crate) fn server(&self, hosts: &[&str]) -> ServerIdentity {
        let names: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
        let mut params = CertificateParams::new(names).expect("server parameters");
        params.distinguished_name.push(DnType::CommonName, hosts[0]);
        let key = KeyPair::generate().expect("server key");
        let cert = params.signed_by(&key, &self.issuer).expect("server certificate");
        ServerIdentity {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// edge-sim on 127.0.0.1 serving https with `identity`.
pub(crate) async fn https_sim(document: SimDocument, identity: &ServerIdentity) -> RunningSim {
    spawn_sim_with(Sim::new(document), AdminAccess::Open, Some(identity.tls()))
        .await
        .expect("edge-sim starts")
}

/// What one proxy connection asked for, and every byte the client sent through it.
#[derive(Debug, Clone)]
pub(crate) struct Proxied {
    pub(crate) request_line: String,
    pub(crate) bytes: Vec<u8>,
}

/// A forward proxy on 127.0.0.1: tunnels CONNECT to loopback targets, answers any
/// other request 502, and records every connection. Stops with the test's runtime.
pub(crate) struct RecordingProxy {
    pub(crate) url: String,
    pub(crate) seen: Arc<Mutex<Vec<Proxied>>>,
}

impl RecordingProxy {
    pub(crate) async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("proxy binds");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let seen: Arc<Mutex<Vec<Proxied>>> = Arc::default();
        let record = seen.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(proxy_one(client, record.clone()));
            }
        });
        Self { url, seen }
    }

    pub(crate) fn connections(&self) -> Vec<Proxied> {
        self.seen.lock().expect("proxy record").clone()
    }
}

/// The most bytes of a request head the proxy reads.
const MAX_HEAD: usize = 16 << 10;

async fn proxy_one(mut client: TcpStream, seen: Arc<Mutex<Vec<Proxied>>>) {
    let mut head = Vec::new();
    let mut buffer = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
        match client.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buffer[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let request_line = text.lines().next().unwrap_or_default().to_string();
    let index = {
        let mut record = seen.lock().expect("proxy record");
        record.push(Proxied {
            request_line: request_line.clone(),
            bytes: head.clone(),
        });
        record.len() - 1
    };
    let target = match request_line.split(' ').collect::<Vec<_>>().as_slice() {
        ["CONNECT", target, _] if target.starts_with("127.0.0.1:") || target.starts_with("localhost:") => {
            target.to_string()
        }
        _ => {
            let _ = client
                .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
                .await;
            return;
        }
    };
    let Ok(mut upstream) = TcpStream::connect(&target).await else {
        let _ = client
            .write_all(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
            .await;
        return;
    };
    if client
        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    let (mut client_read, mut client_write) = client.split();
    let (mut upstream_read, mut upstream_write) = upstream.split();
    let upward = async {
        let mut buffer = [0u8; 8192];
        loop {
            match client_read.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    seen.lock().expect("proxy record")[index]
                        .bytes
                        .extend_from_slice(&buffer[..n]);
                    if upstream_write.write_all(&buffer[..n]).await.is_err() {
                        break;
                    }
                }
            }
        }
        let _ = upstream_write.shutdown().await;
    };
    let downward = async {
        let _ = tokio::io::copy(&mut upstream_read, &mut client_write).await;
        let _ = client_write.shutdown().await;
    };
    tokio::join!(upward, downward);
}
