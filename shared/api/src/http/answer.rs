//! Answers other than `200 OK` with a record, one type each: a handler
//! names what it answers in its signature and builds no status or header by
//! hand.

use std::marker::PhantomData;

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// `201 Created`: the new resource's record, and its URL in `Location`
/// where the resource has one of its own.
pub type Created<T> = Answer<Create, T>;

/// `202 Accepted`: the work goes on after the answer; the record says how
/// it stands, and `Location`, where there is one, where to watch it.
pub type Accepted<T> = Answer<Accept, T>;

/// A record answered with the status `S` names.
pub struct Answer<S, T> {
    record: T,
    location: Option<String>,
    status: PhantomData<S>,
}

/// What an [`Answer`] is: its status.
pub trait Status {
    const CODE: StatusCode;
}

pub enum Create {}
pub enum Accept {}

impl Status for Create {
    const CODE: StatusCode = StatusCode::CREATED;
}

impl Status for Accept {
    const CODE: StatusCode = StatusCode::ACCEPTED;
}

impl<S: Status, T> Answer<S, T> {
    pub fn new(record: T) -> Self {
        Self {
            record,
            location: None,
            status: PhantomData,
        }
    }

    pub fn at(location: String, record: T) -> Self {
        Self {
            location: Some(location),
            ..Self::new(record)
        }
    }
}

impl<S: Status, T: Serialize> IntoResponse for Answer<S, T> {
    fn into_response(self) -> Response {
        match self.location {
            Some(location) => {
                (S::CODE, [(header::LOCATION, location)], Json(self.record)).into_response()
            }
            None => (S::CODE, Json(self.record)).into_response(),
        }
    }
}
