//! Handlers for everything under a resource path: one file per family of verbs.

mod commit;
mod delete;
mod eviction;
mod filter;
mod read;
mod reviews;
mod scale;
mod subresources;
mod watch;
mod write;

use http::Response;

use super::context::{RequestContext, parse_object};
use super::errors::ApiError;
use super::request::Verb;
use super::{ApiServer, ResponseBody, long_running, streams};

pub(crate) use delete::{DeletePolicy, delete_object};

/// Route a resource request to its handler.
pub async fn dispatch(
    server: &ApiServer,
    ctx: RequestContext,
) -> Result<Response<ResponseBody>, ApiError> {
    if reviews::is_review(&ctx.rt) {
        return reviews::create(server, &ctx);
    }
    // A request that stays open is counted against its user's limits for as long as it does.
    let permit = long_running::is_long_running(&ctx)
        .then(|| server.admit_long_running(&ctx.user))
        .transpose()?;
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
        (Some(sub @ ("exec" | "attach" | "portforward")), Verb::Get | Verb::Create)
            if ctx.rt.group.is_empty() && ctx.rt.plural == "pods" =>
        {
            let sub = sub.to_owned();
            streams::serve(server, ctx, &sub, permit)
        }
        (Some(sub), verb) => subresources::handle(server, &ctx, sub, verb)
            .await
            .map(|r| long_running::held_by_body(r, permit)),
    }
}
