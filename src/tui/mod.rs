//! Foundations of the terminal console that do not draw anything themselves: the semantic colour theme every pane
//! styles its text with, and the keymap that turns key presses into named commands and generates the hint bar and
//! help from the same bindings, so what the console shows always matches what the keys do.
pub mod keymap;
pub mod screenshot;
pub mod theme;
