//! Answers other than `200 OK` with a record, one type each: a handler
//! names what it answers in its signature and builds no status or header by
//! hand.

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// `201 Created`: the new resource's record, and its URL in `Location`
/// where the resource has one of its own.
pub struct Created<T> {
    record: T,
    location: Option<String>,
}

/// `202 Accepted`: the work goes on after the answer; the record says how
/// it stands, and `Location`, where there is one, where to watch it.
pub struct Accepted<T> {
    record: T,
    location: Option<String>,
}

impl<T> Created<T> {
    pub fn new(record: T) -> Self {
        Self {
            record,
            location: None,
        }
    }

    pub fn at(location: String, record: T) -> Self {
        Self {
            record,
            location: Some(location),
        }
    }
}

impl<T> Accepted<T> {
    pub fn new(record: T) -> Self {
        Self {
            record,
            location: None,
        }
    }

    pub fn at(location: String, record: T) -> Self {
        Self {
            record,
            location: Some(location),
        }
    }
}

impl<T: Serialize> IntoResponse for Created<T> {
    fn into_response(self) -> Response {
        answer(StatusCode::CREATED, self.location, self.record)
    }
}

impl<T: Serialize> IntoResponse for Accepted<T> {
    fn into_response(self) -> Response {
        answer(StatusCode::ACCEPTED, self.location, self.record)
    }
}

fn answer<T: Serialize>(status: StatusCode, location: Option<String>, record: T) -> Response {
    match location {
        Some(location) => (status, [(header::LOCATION, location)], Json(record)).into_response(),
        None => (status, Json(record)).into_response(),
    }
}
