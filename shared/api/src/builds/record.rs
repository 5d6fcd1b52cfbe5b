//! The Build record the API answers (OpenAPI schema `Build`,
//! `berth_records::builds::BuildRecord`), made from a Build resource.

use berth_cluster::crd::Build;
use berth_records::builds::BuildRecord;

/// The record of a Build resource.
pub fn build_record(build: &Build) -> BuildRecord {
    let status = build.status.clone().unwrap_or_default();
    let spec = &build.spec;
    BuildRecord {
        id: spec.number,
        git_ref: spec.source.git_ref.clone(),
        commit: status.commit,
        strategy: status
            .strategy
            .unwrap_or(spec.source.build.strategy)
            .as_str()
            .to_owned(),
        status: build.phase().to_owned(),
        image: status.image,
        // Asked to cancel, not cancelled yet: say so.
        message: match &spec.cancel {
            Some(why) if !build.is_finished() => Some(format!("cancelling: {why}")),
            _ => status.message,
        },
        created_at: spec.created_at,
        started_at: status.started_at,
        finished_at: status.finished_at,
        actor: spec.actor.clone(),
        revision: status.revision,
    }
}
