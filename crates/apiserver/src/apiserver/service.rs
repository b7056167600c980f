//! The API server as a `tower::Service` over `http` requests. One way of answering serves both the in-process
//! client, which acts as the administrator, and the callers who must authenticate (the HTTPS listener, in-process
//! clients of other identities): only who the caller is gets settled differently.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Limited};

use super::errors::ApiError;
use super::responses::{ResponseBody, error_response};
use super::{ApiServer, MAX_BODY_BYTES};
use crate::identity::{PresentedCertificate, UserInfo};

/// The API server for requests that must authenticate, with a client certificate (its connection's
/// [`PresentedCertificate`], in the request's extensions) or a bearer token: the HTTPS listener and
/// in-process clients acting as a ServiceAccount or the viewer.
#[derive(Clone)]
pub struct Authenticated(pub ApiServer);

/// One request being answered, whichever service took it.
type Answer = Pin<Box<dyn Future<Output = Result<Response<ResponseBody>, Infallible>> + Send>>;

/// Whom a service answers its requests as.
#[derive(Clone, Copy)]
enum Caller {
    /// The administrator, asked for no credentials: the in-process client.
    Administrator,
    /// Whoever the request's client certificate or bearer token names; 401 when they name nobody.
    Authenticated,
}

impl<B> tower::Service<Request<B>> for ApiServer
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + std::fmt::Display,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Answer {
        Box::pin(answer(self.clone(), Caller::Administrator, request))
    }
}

/// The same service as [`ApiServer`]'s, asking who calls.
impl<B> tower::Service<Request<B>> for Authenticated
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + std::fmt::Display,
{
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        tower::Service::<Request<B>>::poll_ready(&mut self.0, cx)
    }

    fn call(&mut self, request: Request<B>) -> Answer {
        Box::pin(answer(self.0.clone(), Caller::Authenticated, request))
    }
}

/// Answer `request` as `caller`: settle who asks, read the body, hand both to the server.
async fn answer<B>(
    server: ApiServer,
    caller: Caller,
    request: Request<B>,
) -> Result<Response<ResponseBody>, Infallible>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + std::fmt::Display,
{
    let user = match caller {
        Caller::Administrator => UserInfo::admin(),
        Caller::Authenticated => {
            // Who is asking is settled before the body is read: an unauthenticated client gets 401 at once.
            let certificate = request.extensions().get::<PresentedCertificate>();
            let user = match server.authenticate(request.headers(), certificate) {
                Ok(user) => user,
                Err(e) => {
                    tracing::debug!(method = %request.method(), uri = %request.uri(), "unauthenticated request");
                    return Ok(error_response(&e));
                }
            };
            // A certificate or token that resolved to a user moves its connection out of the listener's unauthenticated budget.
            if let Some(connection) = request.extensions().get::<kmm_listener::Connection>() {
                connection.promote().await;
            }
            user
        }
    };
    Ok(match read_body(request).await {
        Ok(request) => server.handle_as(user, request).await,
        Err(response) => response,
    })
}

/// Read a request's whole body, up to [`MAX_BODY_BYTES`].
async fn read_body<B>(request: Request<B>) -> Result<Request<Bytes>, Response<ResponseBody>>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>> + std::fmt::Display,
{
    let (parts, body) = request.into_parts();
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => Ok(Request::from_parts(parts, collected.to_bytes())),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(error_response(
            &ApiError::too_large(format!("limit is {MAX_BODY_BYTES}")),
        )),
        Err(e) => Err(error_response(&ApiError::bad_request(format!(
            "reading request body: {e}"
        )))),
    }
}
