//! Handlers for everything under a resource path: one file per family of verbs.

mod commit;
mod component_statuses;
mod delete;
mod eviction;
mod filter;
mod partial_metadata;
mod read;
mod reviews;
mod scale;
mod subresources;
mod watch;
mod write;

use http::Response;

use super::certificates::is_signing_request;
use super::context::{RequestContext, parse_object};
use super::errors::ApiError;
use super::request::Verb;
use super::{ApiServer, ResponseBody, long_running, streams};

pub(crate) use delete::{DeletePolicy, delete_object};

/// Whether the request is for core pods, the only resource with stream and ephemeral container subresources.
fn is_pods(ctx: &RequestContext) -> bool {
    ctx.rt.group.is_empty() && ctx.rt.plural == "pods"
}

/// Route a resource request to its handler.
pub(crate) async fn dispatch(
    server: &ApiServer,
    ctx: RequestContext,
) -> Result<Response<ResponseBody>, ApiError> {
    if reviews::is_review(&ctx.rt) {
        return reviews::create(server, &ctx);
    }
    if component_statuses::is_component_status(&ctx.rt) {
        return component_statuses::serve(&ctx);
    }
    // A request that stays open is counted against its user's limits for as long as it does.
    let permit = long_running::is_long_running(&ctx)
        .then(|| server.admit_long_running(&ctx.user))
        .transpose()?;
    // A metadata-only watch reduces each event itself; other metadata-only requests are reduced here.
    if let Some(form) = partial_metadata::requested(&ctx)?
        && ctx.verb != Verb::Watch
    {
        return partial_metadata::serve(server, &ctx, form).await;
    }
    match (ctx.path.subresource.as_deref(), ctx.verb) {
        (None, Verb::Get) => read::get(server, &ctx),
        (None, Verb::List) => read::list(server, &ctx).await,
        (None | Some("status"), Verb::Watch) => watch::watch(server, &ctx)
            .await
            .map(|r| long_running::held_by_body(r, permit)),
        (None, Verb::Create) => write::create(server, &ctx),
        (None, Verb::Update) => write::update(server, &ctx),
        (None, Verb::Patch) => write::patch(server, &ctx),
        (None, Verb::Delete) => delete::delete(server, &ctx),
        (None, Verb::DeleteCollection) => delete::delete_collection(server, &ctx),
        (Some("status"), Verb::Get) if ctx.rt.status_subresource => read::get(server, &ctx),
        (Some("status"), Verb::Update) if ctx.rt.status_subresource => write::update(server, &ctx),
        (Some("status"), Verb::Patch) if ctx.rt.status_subresource => write::patch(server, &ctx),
        (Some("ephemeralcontainers"), verb) if is_pods(&ctx) => match verb {
            Verb::Get => read::get(server, &ctx),
            Verb::Update => write::update(server, &ctx),
            Verb::Patch => write::patch(server, &ctx),
            other => Err(ApiError::method_not_allowed(
                other.as_str(),
                "pods/ephemeralcontainers",
            )),
        },
        (Some("approval"), Verb::Get) if is_signing_request(&ctx) => read::get(server, &ctx),
        (Some("approval"), Verb::Update) if is_signing_request(&ctx) => write::update(server, &ctx),
        (Some("approval"), Verb::Patch) if is_signing_request(&ctx) => write::patch(server, &ctx),
        (Some(sub @ ("exec" | "attach" | "portforward")), Verb::Get | Verb::Create)
            if is_pods(&ctx) =>
        {
            let sub = sub.to_owned();
            streams::serve(server, ctx, &sub, permit)
        }
        (Some(sub), verb) => subresources::handle(server, &ctx, sub, verb)
            .await
            .map(|r| long_running::held_by_body(r, permit)),
    }
}
