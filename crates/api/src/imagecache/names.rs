//! The labels and annotations of image cache pods: kube-fledged's own, so tools that find kube-fledged's pods find
//! these too, and kmm-tui's, which say which image, node and attempt a pod works on. The cache engine writes them,
//! the console reads them to draw the coverage matrix.

/// kube-fledged's label on every pod it creates.
pub const APP_LABEL: (&str, &str) = ("app", "kubefledged");
/// kube-fledged's label naming the component that created the pod.
pub const MANAGER_LABEL: (&str, &str) = ("kubefledged", "kubefledged-image-manager");
/// kube-fledged's label naming its controller, on the pull and delete pods of its image manager; tools that find
/// kube-fledged's pods by it find this engine's too.
pub const CONTROLLER_LABEL: (&str, &str) = ("controller", "fledged");
/// Selector of every image cache pod, this engine's and kube-fledged's.
pub const SELECTOR: &str = "app=kubefledged,kubefledged=kubefledged-image-manager";
/// Label: the ImageCache the pod works for.
pub const CACHE_LABEL: &str = "imagecache";
/// Label: the node the pod works on (also an annotation, as node names may outgrow a label value).
pub const NODE_LABEL: &str = "kmm-tui.io/node";
/// Label: the first 16 hexadecimal digits of the SHA-256 of the image, so the pods of one image are one query.
pub const IMAGE_HASH_LABEL: &str = "kmm-tui.io/image-hash";
/// Label: `pull`, `refresh` or `delete`.
pub const OPERATION_LABEL: &str = "kmm-tui.io/cache-operation";
/// Annotation: the image, as the cache lists it.
pub const IMAGE_ANNOTATION: &str = "kmm-tui.io/image";
/// Annotation: the node name.
pub const NODE_ANNOTATION: &str = "kmm-tui.io/node";
/// Annotation: which attempt at the pull this pod is (1 for the first), so back-off survives restarts.
pub const ATTEMPT_ANNOTATION: &str = "kmm-tui.io/attempt";
/// Annotation: why the previous attempt failed (`reason: message`), so a retry still shows the failure.
pub const LAST_FAILURE_ANNOTATION: &str = "kmm-tui.io/last-failure";
