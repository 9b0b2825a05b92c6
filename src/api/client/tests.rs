use futures::TryStreamExt;

use super::*;

#[test]
fn the_platform_clock_is_read_from_the_date_of_its_answers_within_bounds() {
    let now: DateTime<Utc> = "2026-11-28T10:00:00Z".parse().expect("time");
    let dated = |date: &str| {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::DATE, HeaderValue::from_str(date).expect("header"));
        clock_offset(&headers, now)
    };
    assert_eq!(dated("Sat, 28 Nov 2026 11:00:00 GMT"), Some(3_600_000));
    assert_eq!(dated("Sat, 28 Nov 2026 09:59:59 GMT"), Some(-1_000));
    let within_its_second: DateTime<Utc> = "2026-11-28T10:00:00.400Z".parse().expect("time");
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::DATE,
        HeaderValue::from_static("Sat, 28 Nov 2026 10:00:00 GMT"),
    );
    assert_eq!(clock_offset(&headers, within_its_second), Some(0), "the clocks agree");
    assert_eq!(dated("Sat, 28 Nov 2099 10:00:00 GMT"), Some(MAX_CLOCK_OFFSET_MS));
    assert_eq!(dated("yesterday"), None);
    assert_eq!(clock_offset(&reqwest::header::HeaderMap::new(), now), None);
}

#[test]
fn retry_after_is_read_as_seconds_or_as_an_http_date_from_the_answer_s_own_date() {
    let now: DateTime<Utc> = "2026-11-28T10:00:00Z".parse().expect("time");
    let answer = |retry: &str, date: Option<&str>| {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_str(retry).expect("header"));
        if let Some(date) = date {
            headers.insert(reqwest::header::DATE, HeaderValue::from_str(date).expect("header"));
        }
        retry_after(&headers, now)
    };
    assert_eq!(answer("120", None), Some(Duration::from_secs(120)));
    assert_eq!(
        answer("Sat, 28 Nov 2026 10:00:30 GMT", None),
        Some(Duration::from_secs(30)),
        "a date, from this process's clock"
    );
    assert_eq!(
        answer("Sat, 28 Nov 2026 12:00:30 GMT", Some("Sat, 28 Nov 2026 12:00:00 GMT")),
        Some(Duration::from_secs(30)),
        "a date, from the answer's own Date: clocks that differ do not matter"
    );
    assert_eq!(
        answer("Sat, 28 Nov 2026 09:00:00 GMT", None),
        Some(Duration::ZERO),
        "a date passed"
    );
    assert_eq!(answer("Sat, 28 Nov 2099 10:00:00 GMT", None), Some(MAX_RETRY_AFTER));
    assert_eq!(answer("soon", None), None);
}

/// A listing that always says "more": pages of `size` bytes.
fn endless(size: usize, limits: WalkLimits) -> impl Stream<Item = Result<u64, ApiError>> {
    paginate(
        move |page: u64| async move { Ok((vec![page], Some(page + 1), size)) },
        1,
        limits,
    )
}

#[tokio::test]
async fn a_client_without_credentials_sends_nothing() {
    // Port 9 (discard) on loopback: a request sent would fail as a transport error.
    let config = ClientConfig::without_credentials("http://127.0.0.1:9", "http://127.0.0.1:9");
    let client = EdgeClient::new(config).expect("client");
    let error = client.get_app("app").await.expect_err("no credentials");
    assert!(
        matches!(&error, ApiError::InvalidInput(m) if m.contains("no credentials")),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_error_answer_is_read_within_the_answer_budget() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let router = axum::Router::new().fallback(|| {
        std::future::ready((
            axum::http::StatusCode::BAD_REQUEST,
            "{\"title\": \"Bad\", \"detail\": \"the platform's words\"}",
        ))
    });
    tokio::spawn(async move { axum::serve(listener, router).await });
    let mut config = ClientConfig::new(&base, &base, Credentials::AccessKey(crate::api::SecretValue::new("k")));
    config.answer_budget_bytes = 1024;
    config.retry = crate::api::RetryPolicy::none();
    config.timeout = std::time::Duration::from_millis(500);
    let client = EdgeClient::new(config).expect("client");
    let held = client.shared.answers.clone().acquire_many_owned(1).await.expect("room");
    let error = client.get_app("app").await.expect_err("400").to_string();
    assert!(
        !error.contains("the platform's words"),
        "read with no room left: {error}"
    );
    drop(held);
    let error = client.get_app("app").await.expect_err("400").to_string();
    assert!(error.contains("the platform's words"), "{error}");
}

#[tokio::test]
async fn an_answer_larger_than_the_whole_budget_is_read_alone() {
    // A 3 KiB answer, with a budget of 1 KiB: it takes all the room instead of
    // waiting for room that cannot be.
    let body = format!("{{\"id\": \"app\", \"name\": \"{}\"}}", "n".repeat(3 << 10));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let router = axum::Router::new().fallback(move || std::future::ready(body.clone()));
    tokio::spawn(async move { axum::serve(listener, router).await });
    let mut config = ClientConfig::new(&base, &base, Credentials::AccessKey(crate::api::SecretValue::new("k")));
    config.answer_budget_bytes = 1024;
    config.timeout = std::time::Duration::from_secs(5);
    let app = EdgeClient::new(config).expect("client").get_app("app").await;
    assert_eq!(app.expect("read within the budget").id, "app");
}

#[tokio::test]
async fn a_page_walk_stops_at_its_count_and_at_its_bytes() {
    let by_count = WalkLimits {
        pages: 50,
        bytes: usize::MAX,
    };
    let error = endless(10, by_count)
        .try_collect::<Vec<_>>()
        .await
        .expect_err("endless");
    assert!(error.to_string().contains("past 50 pages"), "{error}");
    let by_bytes = WalkLimits {
        pages: 1_000,
        bytes: 1 << 20,
    };
    let error = endless(100 << 10, by_bytes)
        .try_collect::<Vec<_>>()
        .await
        .expect_err("endless");
    assert!(
        error.to_string().contains("longer than 1048576 bytes together"),
        "{error}"
    );
    let backwards = paginate(|page: u64| async move { Ok((vec![page], Some(page), 1)) }, 1, by_count);
    assert!(
        backwards.try_collect::<Vec<_>>().await.is_err(),
        "a cursor that does not move"
    );
}

#[tokio::test]
async fn a_proxy_echoing_the_request_shows_no_credential() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    // Echoes every request header's value in a plain-text error page, as a debugging
    // proxy does (without the names, which the header-like scrubbing would catch).
    let router = axum::Router::new().fallback(|headers: axum::http::HeaderMap| {
        let echoed: String = headers
            .values()
            .map(|value| format!("{} ", value.to_str().unwrap_or_default()))
            .collect();
        std::future::ready((
            axum::http::StatusCode::BAD_GATEWAY,
            format!("upstream failed for {echoed}"),
        ))
    });
    tokio::spawn(async move { axum::serve(listener, router).await });
    let key = "pk-0123456789-operator-key";
    let mut config = ClientConfig::new(&base, &base, Credentials::AccessKey(crate::api::SecretValue::new(key)));
    config.retry = crate::api::RetryPolicy::none();
    let client = EdgeClient::new(config).expect("client");
    let error = client.get_app("app").await.expect_err("502").to_string();
    assert!(error.contains("upstream failed"), "{error}");
    assert!(!error.contains(key) && !error.contains("0123456789"), "{error}");
}

#[test]
fn brackets_are_counted_outside_strings_only() {
    assert_eq!(json_containers(br#"{"a":[1,{"b":"[{\"x\"}]"}],"c":"\\"}"#), 3);
    assert_eq!(json_containers(b"[]"), 1);
    assert_eq!(json_containers(b"\"{[\""), 0);
}

#[tokio::test]
async fn an_answer_of_empty_objects_is_refused_before_it_is_decoded() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    // A page of rate-limit rules a few hundred KiB long, each rule `{}`: decoded, a
    // hundred times its size.
    let flood = format!(
        "{{\"data\":[{}],\"page\":{{\"currentPage\":1,\"pageSize\":10}}}}",
        vec!["{}"; 200_000].join(",")
    );
    let router = axum::Router::new().fallback(move || std::future::ready(flood.clone()));
    tokio::spawn(async move { axum::serve(listener, router).await });
    let mut config = ClientConfig::new(&base, &base, Credentials::AccessKey(crate::api::SecretValue::new("k")));
    config.retry = crate::api::RetryPolicy::none();
    let client = EdgeClient::new(config).expect("client");
    let error = client.all_rate_limits(1).await.expect_err("refused");
    assert!(
        error.to_string().contains("more than 1664 objects and arrays"),
        "{error}"
    );
}
