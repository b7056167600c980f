//! The cache views' share of the console's state and keys: the Caches list, and the cache detail with its image
//! summary and coverage matrix. The matrix's rows are the nodes (`j`/`k`), its columns the images (`h`/`l`); the
//! selected column is the selected row of the image summary, so both sections always point at the same image.

use super::{App, Availability, DetailSection, ListId, View, indices};
use crate::tui::data::Kind;
use crate::tui::keymap::Command;
use crate::tui::target::Target;
use crate::tui::view::cache_detail::{
    self, CacheDetail, CellState, CoverageRow, columns_per_page, layout_heights,
};
use crate::tui::writes::WriteRequest;

/// What the cache views keep besides rows, selections and filters.
#[derive(Clone, Debug, Default)]
pub struct CachePane {
    /// The open cache's detail, when the cache detail is open.
    pub detail: Option<CacheDetail>,
    /// The cache and the revisions of the lists the detail was built from: a new list of events or Modules leaves
    /// the 5,000-row matrix as it is.
    built_from: Option<(Target, [u64; 3])>,
    /// The first image column the matrix shows.
    pub column_offset: usize,
}

impl App {
    /// Whether a cache view is on screen, where `P` pulls again and `X` purges.
    pub fn in_cache_views(&self) -> bool {
        matches!(self.view(), View::Caches | View::CacheDetail(_))
    }

    /// Build the open cache's detail again, when the lists it is made of changed.
    pub(super) fn refresh_cache_detail(&mut self) {
        let View::CacheDetail(target) = self.view() else {
            self.caches.detail = None;
            self.caches.built_from = None;
            return;
        };
        // Events only feed the selected cell's panel, which reads them while drawing.
        let sources =
            [Kind::ImageCache, Kind::Node, Kind::Pod].map(|kind| self.data.revision(kind));
        let built_from = Some((target.clone(), sources));
        let unchanged = self.caches.built_from == built_from;
        if unchanged && self.caches.detail.is_some() {
            return;
        }
        self.caches.detail = cache_detail::detail(
            &self.data,
            target.namespace.as_deref().unwrap_or_default(),
            &target.name,
        );
        self.caches.built_from = built_from;
    }

    /// The visible rows of the cache lists, after namespace and filters.
    pub(super) fn cache_lists(
        &self,
        in_namespace: impl Fn(&str) -> bool,
    ) -> Vec<(ListId, Vec<usize>)> {
        let filter = |list: ListId| self.filter(list).to_owned();
        let f = filter(ListId::Caches);
        let mut lists = vec![(
            ListId::Caches,
            indices(&self.rows.caches, |r| {
                in_namespace(&r.namespace) && r.matches(&f)
            }),
        )];
        if let Some(detail) = &self.caches.detail {
            let f = filter(ListId::CacheImages);
            lists.push((
                ListId::CacheImages,
                indices(&detail.images, |r| r.matches(&f)),
            ));
            let f = filter(ListId::Coverage);
            lists.push((ListId::Coverage, indices(&detail.nodes, |r| r.matches(&f))));
        }
        lists
    }

    /// Heights of the cache detail's image summary, matrix and cell panel on this screen.
    fn cache_layout(&self) -> (u16, u16, u16) {
        let (images, nodes) = self
            .caches
            .detail
            .as_ref()
            .map_or((1, 1), |d| (d.images.len(), d.nodes.len()));
        layout_heights(self.size.1.saturating_sub(3), images, nodes)
    }

    /// Rows of the focused cache detail section that fit on screen.
    pub(super) fn cache_page_height(&self) -> usize {
        let (images_height, matrix_height, _) = self.cache_layout();
        let height = if self.list() == ListId::CacheImages {
            images_height
        } else {
            matrix_height
        };
        usize::from(height.saturating_sub(3)).max(1)
    }

    /// Move the selected image column one step, scrolling the matrix sideways to keep it in sight.
    pub(super) fn move_column(&mut self, forward: bool) {
        if !matches!(self.view(), View::CacheDetail(_)) {
            return;
        }
        let len = self.visible(ListId::CacheImages).len();
        let current = self.selection(ListId::CacheImages).index;
        let index = if forward {
            (current + 1).min(len.saturating_sub(1))
        } else {
            current.saturating_sub(1)
        };
        let height = usize::from(self.cache_layout().0.saturating_sub(3));
        self.selections
            .entry(ListId::CacheImages)
            .or_default()
            .set(index, len, height);
        let page = columns_per_page(self.size.0);
        let offset = &mut self.caches.column_offset;
        if index < *offset {
            *offset = index;
        } else if index >= *offset + page {
            *offset = index + 1 - page;
        }
    }

    /// The first visible image column the matrix shows, kept so the selected column is on screen.
    pub fn column_offset(&self) -> usize {
        let index = self.selection(ListId::CacheImages).index;
        let page = columns_per_page(self.size.0);
        self.caches
            .column_offset
            .min(index)
            .max((index + 1).saturating_sub(page))
    }

    /// The selected image (index into the detail's images).
    pub fn selected_image_column(&self) -> Option<usize> {
        self.selected_index(ListId::CacheImages)
    }

    /// The selected matrix row and image column.
    pub fn selected_cell(&self) -> Option<(&CoverageRow, usize)> {
        let detail = self.caches.detail.as_ref()?;
        let row = detail.nodes.get(self.selected_index(ListId::Coverage)?)?;
        Some((row, self.selected_image_column()?))
    }

    /// The ImageCache selected in the Caches list, or the open one.
    pub(super) fn selected_cache(&self) -> Option<Target> {
        match self.view() {
            View::Caches => self
                .selected_index(ListId::Caches)
                .and_then(|i| self.rows.caches.get(i))
                .map(|row| Target::namespaced(Kind::ImageCache, &row.namespace, &row.name)),
            View::CacheDetail(target) => Some(target.clone()),
            _ => None,
        }
    }

    /// The object `y`, `e` and `ctrl-d` act on in the cache views: the node of the matrix row, else the cache.
    pub(super) fn selected_cache_object(&self) -> Option<Target> {
        match self.view() {
            View::CacheDetail(_) if self.list() == ListId::Coverage => self
                .selected_cell()
                .map(|(row, _)| Target::cluster(Kind::Node, &row.node)),
            _ => self.selected_cache(),
        }
    }

    /// Open the selected cache's detail, the matrix focused.
    pub(super) fn open_cache(&mut self) {
        if let Some(cache) = self.selected_cache() {
            self.caches.column_offset = 0;
            self.selections.remove(&ListId::CacheImages);
            self.selections.remove(&ListId::Coverage);
            self.open(View::CacheDetail(cache));
        }
    }

    /// `tab` in the cache detail: between the matrix and the image summary.
    pub(super) fn switch_cache_section(&mut self) {
        self.section = match self.section {
            DetailSection::Images => DetailSection::Nodes,
            _ => DetailSection::Images,
        };
    }

    /// The write `P` (re-pull) or `X` (purge) asks for in the cache views, or why there is none.
    pub(super) fn cache_write(&self, command: Command) -> Result<WriteRequest, String> {
        let cache = self
            .selected_cache()
            .ok_or_else(|| "Select an ImageCache".to_owned())?;
        if command == Command::Purge {
            return Ok(WriteRequest::Purge { cache });
        }
        let Some(detail) = &self.caches.detail else {
            return Ok(WriteRequest::Repull {
                cache,
                image: None,
                node: None,
            });
        };
        let image = self
            .selected_image_column()
            .and_then(|i| detail.images.get(i))
            .map(|image| image.image.clone())
            .ok_or_else(|| "Select an image to pull again".to_owned())?;
        if self.list() == ListId::CacheImages {
            return Ok(WriteRequest::Repull {
                cache,
                image: Some(image),
                node: None,
            });
        }
        let (row, column) = self
            .selected_cell()
            .ok_or_else(|| "Select a node and an image to pull again".to_owned())?;
        if row.cells.get(column) == Some(&CellState::NotWanted) {
            return Err(format!(
                "{image} is not meant for node {} (no list of the cache selects it)",
                row.node
            ));
        }
        Ok(WriteRequest::Repull {
            cache,
            image: Some(image),
            node: Some(row.node.clone()),
        })
    }

    /// Why `P` or `X` cannot run in the cache views, when nothing is selected for them.
    pub(super) fn cache_selection_missing(&self, command: Command) -> Option<Availability> {
        self.cache_write(command)
            .err()
            .map(Availability::Unavailable)
    }
}
