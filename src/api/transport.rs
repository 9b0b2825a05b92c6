//! How requests reach the platform: the certificate authorities trusted, the proxy of
//! https requests, and what a failed TLS handshake means in a person's words.

use std::path::PathBuf;

use reqwest::ClientBuilder;
use rustls::CertificateError;

/// The proxy of https requests. A proxy carries them in a CONNECT tunnel, so TLS runs
/// end to end and the proxy never sees a key. Plain-http requests never go through a
/// proxy: the access key would reach it in clear text.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum HttpsProxy {
    /// `HTTPS_PROXY` (or `https_proxy`), else `ALL_PROXY` (or `all_proxy`); hosts of
    /// `NO_PROXY` go direct.
    #[default]
    FromEnvironment,
    /// This proxy; hosts of `NO_PROXY` go direct.
    Url(String),
    /// No proxy, whatever the environment says.
    Disabled,
}

/// The variables [`HttpsProxy::FromEnvironment`] reads, in order.
const PROXY_VARIABLES: [&str; 4] = ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"];

impl HttpsProxy {
    /// A flag's value: `none`, or the proxy's URL.
    pub fn parse(raw: &str) -> Result<Self, String> {
        match raw.trim() {
            "" => Err("must not be empty (`none` disables the proxy)".into()),
            "none" => Ok(HttpsProxy::Disabled),
            url => {
                reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
                Ok(HttpsProxy::Url(url.to_string()))
            }
        }
    }

    /// The proxy's URL, reading the environment through `variable`.
    pub fn resolve(&self, variable: impl Fn(&str) -> Option<String>) -> Option<String> {
        match self {
            HttpsProxy::FromEnvironment => PROXY_VARIABLES
                .iter()
                .filter_map(|name| variable(name))
                .map(|value| value.trim().to_string())
                .find(|value| !value.is_empty()),
            HttpsProxy::Url(url) => Some(url.clone()),
            HttpsProxy::Disabled => None,
        }
    }
}

/// The certificate authorities the client trusts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedRoots {
    /// PEM certificates trusted besides the system's roots.
    pub extra_pem: Vec<u8>,
    /// Trust `extra_pem` alone, not the system's roots.
    pub extra_only: bool,
}

/// How requests reach the platform: the CAs trusted and the proxy of https requests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transport {
    pub roots: TrustedRoots,
    pub https_proxy: HttpsProxy,
}

/// The flags of the platform connection's TLS and proxy, in `edge-operator run` and
/// `edgectl`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TransportFlags {
    /// PEM file of CA certificates to trust besides the system's: a company proxy's or
    /// a mirror's private CA.
    #[arg(long, env = "EDGE_CA_FILE", global = true)]
    pub ca_file: Option<PathBuf>,
    /// Trust only the CAs of --ca-file, not the system's.
    #[arg(long, global = true, requires = "ca_file")]
    pub ca_file_only: bool,
    /// Proxy of https requests (a CONNECT tunnel: TLS stays end to end), or `none`
    /// [default: HTTPS_PROXY, else ALL_PROXY; NO_PROXY hosts go direct]. Plain-http
    /// requests never use a proxy.
    #[arg(long, env = "EDGE_PROXY", global = true, value_parser = HttpsProxy::parse)]
    pub proxy: Option<HttpsProxy>,
}

impl TransportFlags {
    /// Sets `transport`'s trusted roots and proxy from the flags.
    pub fn apply(&self, transport: &mut Transport) -> Result<(), String> {
        if let Some(path) = &self.ca_file {
            let pem = std::fs::read(path).map_err(|e| format!("--ca-file {}: {e}", path.display()))?;
            transport.roots = TrustedRoots {
                extra_pem: pem,
                extra_only: self.ca_file_only,
            };
            certificates(&transport.roots).map_err(|e| format!("--ca-file {}: {e}", path.display()))?;
        }
        if let Some(proxy) = &self.proxy {
            transport.https_proxy = proxy.clone();
        }
        Ok(())
    }
}

fn certificates(roots: &TrustedRoots) -> Result<Vec<reqwest::Certificate>, String> {
    let certificates = reqwest::Certificate::from_pem_bundle(&roots.extra_pem)
        .map_err(|e| format!("not a PEM bundle of certificates: {e}"))?;
    if certificates.is_empty() {
        return Err("holds no PEM certificate".into());
    }
    Ok(certificates)
}

/// `url` with any password replaced, for messages.
pub(crate) fn without_password(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("redacted"));
            parsed.to_string()
        }
        Ok(parsed) => parsed.to_string(),
        Err(_) => "(not a URL)".into(),
    }
}

/// `url` without its user name and password, for what a person reads.
pub(crate) fn without_userinfo(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() || !parsed.username().is_empty() => {
            let _ = parsed.set_password(None);
            let _ = parsed.set_username("");
            parsed.to_string()
        }
        Ok(_) => url.to_string(),
        Err(_) => "(not a URL)".into(),
    }
}

/// `builder` with `transport`'s trusted roots and proxy; the environment is read
/// through `variable`.
pub(crate) fn configure(
    builder: ClientBuilder,
    transport: &Transport,
    variable: impl Fn(&str) -> Option<String>,
) -> Result<ClientBuilder, String> {
    let mut builder = builder.no_proxy();
    if let Some(url) = transport.https_proxy.resolve(&variable) {
        let no_proxy = ["NO_PROXY", "no_proxy"]
            .iter()
            .find_map(|name| variable(name))
            .and_then(|list| reqwest::NoProxy::from_string(&list));
        let proxy = reqwest::Proxy::https(&url)
            .map_err(|e| format!("proxy {}: {e}", without_password(&url)))?
            .no_proxy(no_proxy);
        builder = builder.proxy(proxy);
    }
    if !transport.roots.extra_pem.is_empty() {
        let roots = certificates(&transport.roots).map_err(|e| format!("trusted CAs: {e}"))?;
        builder = if transport.roots.extra_only {
            builder.tls_certs_only(roots)
        } else {
            builder.tls_certs_merge(roots)
        };
    }
    Ok(builder)
}

/// What went wrong in a TLS handshake, when `error` is one, in a person's words.
pub(crate) fn tls_problem(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next = Some(error);
    while let Some(current) = next {
        if let Some(tls) = rustls_error(current) {
            return Some(describe(tls));
        }
        next = current.source();
    }
    None
}

/// The rustls error that `error` is or carries: the connector wraps it in `io::Error`s,
/// which do not list it as their source.
fn rustls_error<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(tls) = error.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    let inner = error.downcast_ref::<std::io::Error>()?.get_ref()?;
    rustls_error(inner)
}

fn describe(error: &rustls::Error) -> String {
    match error {
        rustls::Error::InvalidCertificate(problem) => match problem {
            CertificateError::UnknownIssuer => {
                "the server's certificate is not signed by a trusted CA (trust its CA with --ca-file, chart value \
                 platform.tls.caBundle)"
                    .into()
            }
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                "the server's certificate is not valid for this host name (check the URL's host)".into()
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                "the server's certificate has expired (or this machine's clock is ahead)".into()
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "the server's certificate is not valid yet (or this machine's clock is behind)".into()
            }
            CertificateError::Revoked => "the server's certificate is revoked".into(),
            other => format!("the server's certificate is refused: {other:?}"),
        },
        rustls::Error::InvalidMessage(_) => {
            "the server does not answer in TLS (does it serve plain http on this port?)".into()
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn environment<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn the_environments_https_proxy_comes_before_all_proxy_and_none_disables_it() {
        let env = [("ALL_PROXY", "http://all:3128"), ("https_proxy", "http://lower:3128")];
        assert_eq!(
            HttpsProxy::FromEnvironment.resolve(environment(&env)).as_deref(),
            Some("http://lower:3128")
        );
        assert_eq!(
            HttpsProxy::FromEnvironment
                .resolve(environment(&[("HTTPS_PROXY", " "), ("ALL_PROXY", "http://all:3128")]))
                .as_deref(),
            Some("http://all:3128")
        );
        assert_eq!(
            HttpsProxy::FromEnvironment.resolve(environment(&[("HTTP_PROXY", "http://p:1")])),
            None
        );
        assert_eq!(HttpsProxy::parse("none"), Ok(HttpsProxy::Disabled));
        assert_eq!(HttpsProxy::Disabled.resolve(environment(&env)), None);
        assert!(HttpsProxy::parse("").is_err() && HttpsProxy::parse("not a url").is_err());
    }

    #[test]
    fn a_url_shown_to_a_person_carries_no_user_name_or_password() {
        assert_eq!(
            without_userinfo("https://user:s3cret@api.example.com/path"),
            "https://api.example.com/path"
        );
        assert_eq!(without_userinfo("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
        assert_eq!(without_userinfo("not a url"), "(not a URL)");
    }

    #[test]
    fn a_proxy_password_never_reaches_a_message() {
        assert_eq!(
            without_password("http://user:hunter2@proxy:3128"),
            "http://user:redacted@proxy:3128/"
        );
    }

    #[test]
    fn a_bundle_without_certificates_is_refused() {
        let roots = TrustedRoots {
            extra_pem: b"not a certificate".to_vec(),
            extra_only: false,
        };
        assert!(certificates(&roots).is_err());
    }

    #[test]
    fn certificate_problems_read_as_what_to_check() {
        let io = std::io::Error::other(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer));
        assert!(tls_problem(&io).is_some_and(|p| p.contains("not signed by a trusted CA")));
        let name = rustls::Error::InvalidCertificate(CertificateError::NotValidForName);
        assert!(tls_problem(&name).is_some_and(|p| p.contains("host name")));
        assert_eq!(tls_problem(&std::io::Error::other("refused")), None);
    }
}
