//! A raw HTTPS client, as an attacker writes one: TLS to the embedded server, then HTTP/1.1 bytes sent as slowly or
//! as malformed as the attack needs.

use std::sync::Arc;
use std::time::Duration;

use kmm_cluster::EmbeddedCluster;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// Connects to one embedded cluster over TLS, trusting its CA.
#[derive(Clone)]
pub(crate) struct Raw {
    address: std::net::SocketAddr,
    connector: TlsConnector,
}

impl Raw {
    /// A client of `cluster`'s HTTPS endpoint.
    pub(crate) fn new(cluster: &EmbeddedCluster) -> Self {
        let kubeconfig = cluster.kubeconfig().expect("the cluster serves HTTPS");
        Self::trusting(kubeconfig, cluster.address().expect("an address"))
    }

    /// A client of the server at `address`, trusting the CA of `kubeconfig`.
    pub(crate) fn trusting(kubeconfig: &str, address: std::net::SocketAddr) -> Self {
        let ca = ca_of(kubeconfig);
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca.as_bytes()) {
            roots
                .add(cert.expect("a CA certificate"))
                .expect("a usable CA");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Self {
            address,
            connector: TlsConnector::from(Arc::new(config)),
        }
    }

    /// Where the server listens.
    pub(crate) fn address(&self) -> std::net::SocketAddr {
        self.address
    }

    /// A TCP connection that never starts TLS.
    pub(crate) async fn tcp(&self) -> TcpStream {
        TcpStream::connect(self.address)
            .await
            .expect("a TCP connection")
    }

    /// A TLS connection, handshake done.
    pub(crate) async fn tls(&self) -> TlsStream<TcpStream> {
        self.handshake(self.tcp().await).await
    }

    /// TLS on `socket`: returns once the server has answered the handshake.
    pub(crate) async fn handshake(&self, socket: TcpStream) -> TlsStream<TcpStream> {
        self.try_handshake(socket).await.expect("a TLS handshake")
    }

    /// TLS on `socket`, or why the server did not complete the handshake.
    pub(crate) async fn try_handshake(
        &self,
        socket: TcpStream,
    ) -> std::io::Result<TlsStream<TcpStream>> {
        let name = ServerName::try_from("localhost").expect("a server name");
        self.connector.connect(name, socket).await
    }

    /// Send `head` and `body` on a new connection and return the response's status (None when the server
    /// closed the connection without one) and body.
    pub(crate) async fn request(&self, head: &str, body: &[u8]) -> (Option<u16>, String) {
        self.request_bytes(head.as_bytes(), body).await
    }

    /// [`Raw::request`] with a head that need not be text.
    pub(crate) async fn request_bytes(&self, head: &[u8], body: &[u8]) -> (Option<u16>, String) {
        let mut stream = self.tls().await;
        let rest = format!(
            "\r\nHost: localhost\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head).await.expect("sent");
        stream.write_all(rest.as_bytes()).await.expect("sent");
        stream.write_all(body).await.expect("sent");
        let mut response = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut response))
            .await
            .expect("an answer or a close in time");
        let text = String::from_utf8_lossy(&response).into_owned();
        let status = text
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok());
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (status, body)
    }
}

fn ca_of(kubeconfig: &str) -> String {
    use base64::Engine;
    let config = kube::config::Kubeconfig::from_yaml(kubeconfig).expect("a kubeconfig");
    let data = config
        .clusters
        .first()
        .and_then(|c| c.cluster.as_ref())
        .and_then(|c| c.certificate_authority_data.clone())
        .expect("the kubeconfig holds the CA");
    let pem = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .expect("base64");
    String::from_utf8(pem).expect("PEM")
}
