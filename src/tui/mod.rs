//! The terminal console: state fed by watches, actions as messages, drawing as a pure function of state.
//!
//! - [`data`] holds the latest lists from the cluster; [`feed`] keeps them coming from kube-rs reflectors.
//! - [`view`] turns them into the rows each pane shows; [`ui`] draws them.
//! - [`app`] owns the state and turns every [`action::Action`] into state changes and [`app::Request`]s.
//! - [`writes`] and [`access`] talk to the API server for the user; [`console`] runs the loop that ties them.
//! - [`fleet`] keeps what the console knows of every cluster of the kubeconfig, for the fleet view; [`fleet_feed`]
//!   follows each at little cost.
//! - [`worded`] words every failure the console shows for a person.
//! - `sample` is a fixed cluster for the snapshot tests, the benchmarks and the screenshots (the `samples`
//!   feature, which the tests turn on); `screenshot` turns a rendered frame into a PNG and `gallery` takes the
//!   README's pictures (the `screenshots` feature). Neither is built into the product binary.
pub mod access;
pub mod action;
pub mod app;
pub mod console;
pub mod data;
mod editor;
pub mod feed;
pub mod fleet;
pub mod fleet_feed;
#[cfg(feature = "screenshots")]
pub mod gallery;
mod help;
mod kept;
pub mod keymap;
mod lean;
pub mod live;
mod logs;
pub mod prompt;
mod reconnect;
#[cfg(any(test, feature = "samples"))]
pub mod sample;
#[cfg(feature = "screenshots")]
pub mod screenshot;
pub mod target;
pub mod theme;
pub mod ui;
pub mod view;
pub mod worded;
pub mod writes;
mod yaml;
