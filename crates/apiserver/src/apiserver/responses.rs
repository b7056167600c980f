//! The responses every endpoint builds: whole JSON documents, already serialised bodies and `metav1.Status`
//! errors, all with the one body type the server answers with.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use serde_json::Value;

use super::errors::ApiError;

/// The body of every response: a full JSON document, or a stream of watch events or log lines.
pub type ResponseBody = UnsyncBoxBody<Bytes, Infallible>;

/// A whole body.
pub fn full(bytes: Bytes) -> ResponseBody {
    Full::new(bytes).boxed_unsync()
}

/// A JSON response.
pub fn json_response(status: StatusCode, value: &Value) -> Response<ResponseBody> {
    bytes_response(
        status,
        Bytes::from(serde_json::to_vec(value).unwrap_or_default()),
        "application/json",
    )
}

/// A response whose body is already serialised.
pub fn bytes_response(
    status: StatusCode,
    body: Bytes,
    content_type: &'static str,
) -> Response<ResponseBody> {
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// The `metav1.Status` response for an error.
pub fn error_response(error: &ApiError) -> Response<ResponseBody> {
    let status = StatusCode::from_u16(error.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = bytes_response(status, Bytes::from(error.to_body()), "application/json");
    if let Some(seconds) = error.retry_after_seconds() {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}
