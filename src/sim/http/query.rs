//! The query parameters of a platform or logging request, as every handler reads them.

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

/// A request's query parameters in the order sent, without those sent empty.
///
/// An optional parameter whose value is empty (`end=`, or `end` alone) is absent: a
/// client generated from the platform's published schemas sends every optional
/// parameter of a route, empty when its caller set none, and the platform answers as if
/// they were not there. A value that is present is the handler's to validate.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct QueryParams(pub(crate) Vec<(String, String)>);

impl QueryParams {
    /// The parameters of a raw query string (`None`: the URI has none).
    pub(crate) fn parse(query: Option<&str>) -> Self {
        let pairs = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .filter(|(_, value)| !value.is_empty())
            .map(|(name, value)| (name.into_owned(), value.into_owned()))
            .collect();
        Self(pairs)
    }

    /// Whether a raw query string sends a parameter empty.
    pub(crate) fn sends_empty(query: Option<&str>) -> bool {
        url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()).any(|(_, value)| value.is_empty())
    }
}

impl<S: Send + Sync> FromRequestParts<S> for QueryParams {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self::parse(parts.uri.query()))
    }
}

#[cfg(test)]
mod tests {
    use super::QueryParams;

    fn pairs(query: &str) -> Vec<(String, String)> {
        QueryParams::parse(Some(query)).0
    }

    #[test]
    fn parameters_sent_empty_are_absent() {
        assert_eq!(pairs("end=&order=&search=&start=&status="), Vec::new());
        assert_eq!(pairs("start&end="), Vec::new());
        assert_eq!(QueryParams::parse(None), QueryParams::default());
        assert!(QueryParams::sends_empty(Some("order=asc&end=")));
        assert!(!QueryParams::sends_empty(Some("order=asc")));
        assert!(!QueryParams::sends_empty(None));
    }

    #[test]
    fn values_are_decoded_and_kept_in_the_order_sent() {
        assert_eq!(
            pairs("search=a+b%2Fc&start=&order=asc&start=2"),
            vec![
                ("search".to_string(), "a b/c".to_string()),
                ("order".to_string(), "asc".to_string()),
                ("start".to_string(), "2".to_string()),
            ]
        );
    }

    #[test]
    fn a_value_of_whitespace_is_not_empty() {
        assert_eq!(pairs("search=%20"), vec![("search".to_string(), " ".to_string())]);
    }
}
