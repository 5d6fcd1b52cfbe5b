//! `make bench`: the audit log under concurrency.
//!
//! Many Lambda instances of one organization write its audit log at once.
//! This drives `GET /api/v1/me` through the full router against DynamoDB
//! Local, first from one client (the baseline), then from 50 at once, and
//! checks the log afterwards: one event per call (none lost), every `seq`
//! unique, and paging newest-first through the API's reader equal to the
//! whole partition.
//!
//! `BERTH_BENCH_LOAD_REQUESTS` (default 2000) sets the requests at
//! concurrency 50; the single client makes a fifth as many.

mod common;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use http::{Method, StatusCode};

use berth_api::AppState;
use berth_api::config::Config;
use berth_store::identity::{members, tokens};
use berth_store::round_trips::RoundTripCounter;
use berth_store::{keys, schema};

struct Run {
    concurrency: usize,
    requests: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
}

impl Run {
    fn rate(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }
}

async fn drive(berth: &common::Call, token: &str, concurrency: usize, requests: usize) -> Run {
    let started = Instant::now();
    let per_client = requests / concurrency;
    let clients: Vec<_> = (0..concurrency)
        .map(|_| {
            let router = berth.router.clone();
            let token = token.to_owned();
            tokio::spawn(async move {
                let berth = common::Call { router };
                let mut latencies = Vec::with_capacity(per_client);
                for _ in 0..per_client {
                    let sent = Instant::now();
                    let (status, _) = berth
                        .send(Method::GET, "/api/v1/me", Some(&token), None)
                        .await;
                    assert_eq!(status, StatusCode::OK);
                    latencies.push(sent.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(requests);
    for client in clients {
        latencies.extend(client.await.unwrap());
    }
    latencies.sort();
    Run {
        concurrency,
        requests: per_client * concurrency,
        elapsed: started.elapsed(),
        latencies,
    }
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return;
    }
    let requests: usize = std::env::var("BERTH_BENCH_LOAD_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let client = common::client(&RoundTripCounter::default());
    let table = format!("bench-{}", uuid::Uuid::new_v4().simple());
    schema::create_table(&client, &table).await.unwrap();
    let state = AppState::new(client.clone(), Config::for_table(&table));
    let berth = common::Call {
        router: berth_local::app(state.clone()),
    };
    let owner = members::bootstrap(&state.store, "load", "owner@load.example")
        .await
        .unwrap();
    let token = tokens::create(
        &state.store,
        &owner.member.id,
        tokens::NewToken::unlimited("load"),
    )
    .await
    .unwrap()
    .token;
    // Warm up: the token's first use, the connection pool.
    drive(&berth, &token, 10, 50).await;

    let single = drive(&berth, &token, 1, requests / 5).await;
    let many = drive(&berth, &token, 50, requests).await;

    println!("GET /api/v1/me, one organization, full router, DynamoDB Local\n");
    println!("| concurrency | requests | req/s | p50 | p99 |");
    println!("|---|---|---|---|---|");
    for run in [&single, &many] {
        println!(
            "| {} | {} | {:.0} | {:.1} ms | {:.1} ms |",
            run.concurrency,
            run.requests,
            run.rate(),
            common::percentile(&run.latencies, 0.5).as_secs_f64() * 1000.0,
            common::percentile(&run.latencies, 0.99).as_secs_f64() * 1000.0,
        );
    }
    println!(
        "\nthroughput at 50 / at 1: {:.2}x (target at least 1.5x); p99 at 50: {:.0} ms (target under 1000 ms)",
        many.rate() / single.rate(),
        common::percentile(&many.latencies, 0.99).as_secs_f64() * 1000.0
    );

    // The log: every call's event, once, and paging that shows them all.
    let stored: Vec<_> = client
        .query()
        .table_name(&table)
        .key_condition_expression("pk = :pk AND begins_with(sk, :events)")
        .expression_attribute_values(":pk", AttributeValue::S(keys::audit("load")))
        .expression_attribute_values(
            ":events",
            AttributeValue::S(keys::AUDIT_EVENT_SK_PREFIX.to_owned()),
        )
        .into_paginator()
        .items()
        .send()
        .try_collect()
        .await
        .unwrap();
    let getting_me = stored
        .iter()
        .filter(|item| item["action"].as_s().is_ok_and(|a| a == "getCurrentUser"))
        .count();
    let expected = 50 + single.requests + many.requests;
    let unique: HashSet<_> = stored
        .iter()
        .map(|item| item["seq"].as_n().unwrap().clone())
        .collect();
    let mut paged = Vec::new();
    let mut before = None;
    loop {
        let page = state.audit.page("load", 200, before).await.unwrap();
        paged.extend(page.events.iter().map(|e| e.seq));
        match page.next_before {
            Some(next) => before = Some(next),
            None => break,
        }
    }
    let mut all: Vec<u64> = unique.iter().map(|n| n.parse().unwrap()).collect();
    all.sort_unstable_by(|a, b| b.cmp(a));
    println!(
        "events: {getting_me} of {expected} calls recorded ({} lost); {} stored, {} unique seqs; \
         paging {}; fallbacks {}",
        expected.saturating_sub(getting_me),
        stored.len(),
        unique.len(),
        if paged == all { "exact" } else { "NOT exact" },
        state.audit.fallbacks(),
    );
    assert_eq!(getting_me, expected, "audit events were lost");
    assert_eq!(unique.len(), stored.len(), "a seq was used twice");
    assert_eq!(paged, all, "paging skipped or repeated events");
}
