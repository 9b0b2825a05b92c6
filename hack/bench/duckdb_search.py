#!/usr/bin/env python3
"""DuckDB side of the event-search benchmark (benches/platform/search.rs).

Reads DIR/events.csv and DIR/queries.json (EventLogsSearchRequest bodies), runs each
query as SQL with the emulator's documented semantics, and prints
{"medians_ms": [...], "results": [...]} with results shaped like the Rust side's.
"""
import json
import statistics
import sys
import time

import duckdb

DIMENSIONS = ["feature", "ruleId", "ip", "ja4", "ua", "url", "asn", "country", "action"]


def quote_ident(name):
    return '"' + name + '"'


def quote_literal(value):
    return "'" + value.replace("'", "''") + "'"


def filter_sql(flt):
    col = quote_ident(flt["field"])
    values = flt["value"]
    op = flt["op"]
    if op in ("eq", "in"):
        return f"{col} IN ({', '.join(quote_literal(v) for v in values)})"
    if op == "contains":
        return "(" + " OR ".join(f"contains(lower({col}), {quote_literal(v.lower())})" for v in values) + ")"
    if op == "wildcard":
        def like(v):
            escaped = v.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_").replace("*", "%")
            return f"lower({col}) LIKE {quote_literal(escaped)} ESCAPE '\\'"
        return "(" + " OR ".join(like(v) for v in values) + ")"
    raise ValueError(f"operator {op} is not translated")


def where_sql(query):
    parts = [f"ts >= {query['from']}", f"ts < {query['to']}"]
    parts += [filter_sql(f) for f in query.get("filters") or []]
    return " AND ".join(parts)


def page_size(query):
    size = query.get("pageSize") or 0
    return 50 if size == 0 else max(1, min(500, size))


def flat(con, query):
    sql = (
        f'SELECT "logId", ts, count(*) OVER () AS total FROM ev WHERE {where_sql(query)} '
        f'ORDER BY ts DESC, "logId" LIMIT {page_size(query)}'
    )

    def shape(rows):
        return {"total": rows[0][2] if rows else 0, "rows": [[r[0], r[1]] for r in rows]}

    return sql, shape


def grouped(con, query):
    dims = query["groupBy"]
    buckets = min(query.get("buckets") or 0, 500)
    keys = ", ".join(quote_ident(d) for d in dims)

    def with_keys(*extra):
        cols = list(dims) + [c for c in extra if c not in dims]
        return ", ".join(quote_ident(c) for c in cols)

    frm, to = query["from"], query["to"]
    spark_cte = ""
    spark_col = ", NULL AS spark"
    spark_join = ""
    if buckets:
        spark_cte = (
            f", sp AS (SELECT {keys}, list(struct_pack(b := b, n := n)) AS spark FROM ("
            f"SELECT {keys}, ((ts - {frm})::HUGEINT * {buckets} // ({to} - {frm}))::BIGINT AS b, count(*) AS n "
            f"FROM m GROUP BY ALL) GROUP BY {keys})"
        )
        spark_col = ", sp.spark"
        spark_join = f" JOIN sp USING ({keys})"
    sql = f"""
WITH f AS (SELECT * FROM ev WHERE {where_sql(query)}),
g AS (SELECT {keys}, count(*) AS c, min(ts) AS first_seen, max(ts) AS last_seen FROM f GROUP BY {keys}),
top AS (SELECT *, count(*) OVER () AS total FROM g ORDER BY c DESC, {keys} LIMIT {page_size(query)}),
m AS (SELECT f.* FROM f JOIN top USING ({keys})),
cm AS (SELECT {keys}, first(country ORDER BY n DESC, country) AS top_country
       FROM (SELECT {with_keys('country')}, count(*) AS n FROM m GROUP BY ALL) GROUP BY {keys}),
am AS (SELECT {keys}, first(asn ORDER BY n DESC, asn) AS top_asn
       FROM (SELECT {with_keys('asn')}, count(*) AS n FROM m GROUP BY ALL) GROUP BY {keys}),
agg AS (SELECT {keys},
          count(*) FILTER (WHERE lower(action) = 'block') AS blocked,
          count(*) FILTER (WHERE lower(action) = 'challenge') AS challenged,
          count(*) FILTER (WHERE lower(action) = 'log') AS logged,
          string_agg(DISTINCT feature, ',' ORDER BY feature) AS features,
          string_agg(DISTINCT "ruleId", ',' ORDER BY "ruleId") AS rule_ids
        FROM m GROUP BY {keys}){spark_cte}
SELECT {', '.join('top.' + quote_ident(d) for d in dims)}, top.c, top.first_seen, top.last_seen, top.total,
       cm.top_country, am.top_asn, agg.blocked, agg.challenged, agg.logged, agg.features, agg.rule_ids{spark_col}
FROM top JOIN cm USING ({keys}) JOIN am USING ({keys}) JOIN agg USING ({keys}){spark_join}
ORDER BY top.c DESC, {', '.join('top.' + quote_ident(d) for d in dims)}
"""

    def shape(rows):
        n = len(dims)
        groups = []
        for r in rows:
            sparkline = None
            if buckets:
                sparkline = [0] * buckets
                for point in r[n + 11]:
                    sparkline[point["b"]] = point["n"]
            groups.append({
                "key": dict(zip(dims, r[:n])),
                "count": r[n], "firstSeen": r[n + 1], "lastSeen": r[n + 2],
                "sparkline": sparkline,
                "context": [r[n + 4], r[n + 5], r[n + 6], r[n + 7], r[n + 8], r[n + 9], r[n + 10]],
            })
        return {"total": rows[0][n + 3] if rows else 0, "groups": groups}

    return sql, shape


def main():
    directory = sys.argv[1]
    with open(f"{directory}/queries.json") as f:
        spec = json.load(f)
    con = duckdb.connect()
    columns = {"logId": "VARCHAR", "ts": "BIGINT"}
    columns.update({d: "VARCHAR" for d in DIMENSIONS})
    columns["ruleName"] = "VARCHAR"
    con.execute(
        "CREATE TABLE ev AS SELECT * FROM read_csv(?, header = true, quote = '\"', escape = '\"', columns = ?)",
        [f"{directory}/events.csv", columns],
    )
    medians, results = [], []
    for query in spec["queries"]:
        sql, shape = grouped(con, query) if query.get("groupBy") else flat(con, query)
        samples, rows = [], None
        for _ in range(spec["runs"]):
            started = time.perf_counter()
            rows = con.execute(sql).fetchall()
            samples.append((time.perf_counter() - started) * 1000.0)
        medians.append(statistics.median(samples))
        results.append(shape(rows))
    json.dump({"medians_ms": medians, "results": results}, sys.stdout)


if __name__ == "__main__":
    main()
