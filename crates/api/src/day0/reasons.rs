//! The reasons of a ModuleDay0's conditions: the engine sets them, the console tells the states a person acts on
//! by them (`LayeredImageKept` is Available but waiting for an opt-in; `SignFailed` points at the sign pod).

/// Available: every node of the pool runs the target image's OS.
pub const APPLIED: &str = "Applied";
/// Available: the pool runs the mapped image while the cluster moved to another y-stream without opting in.
pub const LAYERED_IMAGE_KEPT: &str = "LayeredImageKept";
/// Progressing: a pull pod is checking the registry for the image.
pub const CHECKING_IMAGE: &str = "CheckingImage";
/// Progressing: the image is missing, nothing builds it, and the engine waits for it to be pushed.
pub const WAITING_FOR_IMAGE: &str = "WaitingForImage";
/// Progressing: the image is being built.
pub const BUILDING: &str = "Building";
/// Progressing: the image is being signed.
pub const SIGNING: &str = "Signing";
/// Progressing: the MachineConfig names the image but the pool does not roll (paused, or no node in it).
pub const WAITING_FOR_POOL: &str = "WaitingForPool";
/// Progressing: the pool's nodes are moving onto the image.
pub const ROLLING: &str = "Rolling";
/// Degraded: another ModuleDay0 already targets the pool.
pub const DUPLICATE_POOL: &str = "PoolAlreadyManaged";
/// Degraded: no MachineConfigPool has the selector.
pub const NO_POOL: &str = "NoMachineConfigPool";
/// Degraded: no MachineConfig labelled kmm-managed feeds the pool.
pub const NO_MACHINE_CONFIG: &str = "NoMachineConfig";
/// Degraded: a node of the pool failed to update.
pub const POOL_DEGRADED: &str = "PoolDegraded";
/// Progressing or Degraded is false: nothing to do, or nothing wrong.
pub const AS_EXPECTED: &str = "AsExpected";
/// Degraded: a build pod failed.
pub const BUILD_FAILED: &str = "BuildFailed";
/// Degraded: a sign pod failed.
pub const SIGN_FAILED: &str = "SignFailed";
