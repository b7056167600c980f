//! The `Status` written on the error channel when a command ends: how clients learn its exit code (kubectl exits
//! with it), worded as the kubelet words it.

use serde_json::{Value, json};

/// The Status for a command that exited with `exit_code`.
pub(super) fn exit_status(exit_code: i32) -> Value {
    if exit_code == 0 {
        return json!({"metadata": {}, "status": "Success"});
    }
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!("command terminated with non-zero exit code: exit status {exit_code}"),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": exit_code.to_string()}]},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_carries_its_exit_code_as_a_cause() {
        assert_eq!(exit_status(0)["status"], "Success");
        let failed = exit_status(3);
        assert_eq!(failed["status"], "Failure");
        assert_eq!(failed["reason"], "NonZeroExitCode");
        assert_eq!(failed["details"]["causes"][0]["reason"], "ExitCode");
        assert_eq!(failed["details"]["causes"][0]["message"], "3");
    }
}
