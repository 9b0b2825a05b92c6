//! Bodies generated from the published schemas decode in the client, and `edgectl -o json`
//! shows their identifiers.

use super::*;

type Check = fn(&EdgeClient, Value) -> BoxFuture<'_, Result<(), String>>;

/// One operation with a published response schema: where to fault it, how the client
/// reads it, and how `edgectl` shows it.
struct Operation {
    document: Document,
    schema: &'static str,
    method: &'static str,
    path: &'static str,
    /// Decodes `generated` through the client and compares what the product uses.
    check: Check,
    cli: &'static [&'static str],
    /// Compares `edgectl -o json` output with the generated body.
    cli_check: fn(&Value, &Value) -> Result<(), String>,
}

fn same<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: decoded {got:?}, generated {want:?}"))
    }
}

fn ids(generated: &Value, list: &str, member: &str) -> Vec<Value> {
    generated[list]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| item[member].clone())
        .collect()
}

fn null_as(value: &Value, default: Value) -> Value {
    if value.is_null() { default } else { value.clone() }
}

fn operations() -> Vec<Operation> {
    vec![
        Operation {
            document: Document::Shield,
            schema: "AccessListsDetailsResponse",
            method: "GET",
            path: "/shield/shield-zone/1001/access-lists",
            check: |client, generated| {
                Box::pin(async move {
                    let lists = client.access_lists(1001).await.map_err(|e| e.to_string())?;
                    let decoded: Vec<Value> = lists.all_lists().map(|l| json!(l.configuration_id)).collect();
                    let mut wanted = ids(&generated, "managedLists", "configurationId");
                    wanted.extend(ids(&generated, "customLists", "configurationId"));
                    same("configuration ids", decoded, wanted)
                })
            },
            cli: &["access-lists", "list", "--zone", "1001"],
            cli_check: |output, generated| {
                same(
                    "managed list ids",
                    ids(output, "managedLists", "listId"),
                    ids(generated, "managedLists", "listId"),
                )
            },
        },
        Operation {
            document: Document::Shield,
            schema: "UpdateAccessListConfigurationResponse",
            method: "PATCH",
            path: "/shield/shield-zone/1001/access-lists/configurations/9101",
            check: |client, generated| {
                Box::pin(async move {
                    let patch = AccessListConfigurationPatch {
                        is_enabled: Some(true),
                        action: None,
                    };
                    let written = client
                        .update_access_list(1001, 9101, &patch)
                        .await
                        .map_err(|e| e.to_string())?;
                    let data = &generated["data"];
                    same(
                        "isEnabled",
                        json!(written.is_enabled),
                        null_as(&data["isEnabled"], Value::Null),
                    )?;
                    same("action", json!(written.action), null_as(&data["action"], Value::Null))
                })
            },
            cli: &[
                "access-lists",
                "set",
                "--zone",
                "1001",
                "--configuration",
                "9101",
                "--enabled",
                "true",
            ],
            cli_check: |output, generated| {
                let reported = null_as(&generated["data"]["isEnabled"], json!(true));
                same("after.isEnabled", output["after"]["isEnabled"].clone(), reported)
            },
        },
        Operation {
            document: Document::Shield,
            schema: "GetCustomWafRulesResponse",
            method: "GET",
            path: "/shield/rate-limits/1001",
            check: |client, generated| {
                Box::pin(async move {
                    let page = client.rate_limits_page(1001, 1, 10).await.map_err(|e| e.to_string())?;
                    let decoded: Vec<Value> = page.data.iter().map(|r| json!(r.id)).collect();
                    let wanted: Vec<Value> = ids(&generated, "data", "id")
                        .iter()
                        .map(|v| null_as(v, json!(0)))
                        .collect();
                    same("rule ids", decoded, wanted)?;
                    same(
                        "next page",
                        json!(page.page.next_page),
                        null_as(&generated["page"]["nextPage"], Value::Null),
                    )
                })
            },
            cli: &["rate-limits", "list", "--zone", "1001"],
            cli_check: |output, generated| {
                let decoded: Vec<Value> = output
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|r| r["id"].clone())
                    .collect();
                let wanted: Vec<Value> = ids(generated, "data", "id")
                    .iter()
                    .map(|v| null_as(v, json!(0)))
                    .collect();
                same("rule ids", decoded, wanted)
            },
        },
        Operation {
            document: Document::MagicContainers,
            schema: "Application",
            method: "GET",
            path: "/mc/apps/",
            check: |client, generated| {
                Box::pin(async move {
                    let app = client.get_app("any").await.map_err(|e| e.to_string())?;
                    same("id", json!(app.id), generated["id"].clone())?;
                    let status = generated["status"].as_str().unwrap_or_default();
                    same(
                        "status",
                        app.status.as_str().to_ascii_lowercase(),
                        status.to_ascii_lowercase(),
                    )
                })
            },
            cli: &["app", "get", "any"],
            cli_check: |output, generated| same("id", output["id"].clone(), generated["id"].clone()),
        },
        Operation {
            document: Document::Shield,
            schema: "EventLogsSearchResponse",
            method: "POST",
            path: "/shield/event-logs/1001/search",
            check: |client, generated| {
                Box::pin(async move {
                    let request = EventLogsSearchRequest::window(now_ms() - 1000, now_ms());
                    let response = client.search_events(1001, &request).await.map_err(|e| e.to_string())?;
                    let rows: Vec<Value> = response.rows.iter().flatten().map(|r| json!(r.log_id)).collect();
                    same("row log ids", rows, ids(&generated, "rows", "logId"))?;
                    let counts: Vec<Value> = response.groups.iter().flatten().map(|g| json!(g.count)).collect();
                    let wanted: Vec<Value> = ids(&generated, "groups", "count")
                        .iter()
                        .map(|v| null_as(v, json!(0)))
                        .collect();
                    same("group counts", counts, wanted)
                })
            },
            cli: &["events", "search", "--zone", "1001", "--since", "1h"],
            cli_check: |output, generated| {
                same(
                    "row log ids",
                    ids(output, "rows", "logId"),
                    ids(generated, "rows", "logId"),
                )
            },
        },
    ]
}

fn fault(sim: &RunningSim, operation: &Operation, body: &Value) {
    add_fault(
        sim,
        json!({"method": operation.method, "pathPrefix": operation.path, "status": 200, "count": 1, "body": body}),
    );
}

async fn edgectl(base: &str, args: &[&str]) -> Result<Value, String> {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_edgectl"))
        .args(args)
        .args(["-o", "json"])
        .env("EDGE_API_URL", base)
        .env("EDGE_ACCESS_KEY", ACCESS_KEY)
        .output()
        .await
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(format!("edgectl failed: {}", String::from_utf8_lossy(&output.stderr)));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| format!("edgectl printed no JSON: {e}"))
}

/// Generates `CASES` bodies for `operation`, serves each through edge-sim's fault
/// injection and checks that the client (and for some, `edgectl`) reads them.
fn decode_generated(sim: &RunningSim, runtime: &tokio::runtime::Runtime, operation: &Operation, mode: Mode) -> usize {
    // Everything the published schema allows, beyond what edge-sim answers.
    let root = schema(operation.document, operation.schema, Required::Enforced);
    let strict =
        BodyValidator::new(operation.document, operation.schema, Required::Enforced).unwrap_or_else(|e| panic!("{e}"));
    // Generated bodies carry unknown members and enum values in any case on purpose.
    let client = lenient_client_of(sim, RetryPolicy::none());
    let base = sim.base_url();
    let decoded = AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&body(&root, mode), |mut generated| {
        if mode == Mode::Strict {
            let violations = strict.violations(&generated);
            if !violations.is_empty() {
                return Err(TestCaseError::fail(format!(
                    "the generator broke the schema: {violations:?}"
                )));
            }
        }
        if operation.schema == "GetCustomWafRulesResponse" {
            // The CLI walks every page: make each generated page the last one.
            generated["page"] = json!({"nextPage": null});
        }
        let n = decoded.fetch_add(1, Ordering::Relaxed);
        runtime.block_on(async {
            fault(sim, operation, &generated);
            (operation.check)(&client, generated.clone())
                .await
                .map_err(TestCaseError::fail)?;
            if n < CLI_CASES {
                fault(sim, operation, &generated);
                let output = edgectl(&base, operation.cli).await.map_err(TestCaseError::fail)?;
                (operation.cli_check)(&output, &generated).map_err(TestCaseError::fail)?;
            }
            Ok(())
        })
    });
    if let Err(error) = result {
        panic!("{} ({mode:?}): {error}", operation.schema);
    }
    decoded.into_inner()
}

#[test]
fn bodies_generated_from_the_published_schemas_decode_in_the_client_and_cli() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let sim = runtime.block_on(start(fixtures_at()));
    for operation in operations() {
        for mode in [Mode::Strict, Mode::Tolerant] {
            let count = decode_generated(&sim, &runtime, &operation, mode);
            eprintln!(
                "contract: {} ({mode:?}): {count} generated bodies decoded by the client, {} by edgectl",
                operation.schema,
                count.min(CLI_CASES)
            );
        }
    }
}
