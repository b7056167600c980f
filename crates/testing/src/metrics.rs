//! Reading the API server's `/metrics` scrape: the samples of one metric, each with its labels, so a test or a
//! benchmark can count what a client asked or was sent.

/// One sample of a metric: the labels between its braces and its value.
pub struct Sample<'a> {
    labels: &'a str,
    /// The sample's value.
    pub value: f64,
}

impl Sample<'_> {
    /// The value of label `name`, if the sample has it.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels.split(',').find_map(|pair| {
            pair.strip_prefix(name)?
                .strip_prefix("=\"")?
                .strip_suffix('"')
        })
    }
}

/// The samples of `metric` (a sample name as scraped, `apiserver_request_total`) in the scrape `text`.
pub fn samples<'a>(text: &'a str, metric: &str) -> impl Iterator<Item = Sample<'a>> {
    let prefix = format!("{metric}{{");
    text.lines().filter_map(move |line| {
        let (labels, value) = line.strip_prefix(&prefix)?.split_once("} ")?;
        Some(Sample {
            labels,
            value: value.trim().parse().ok()?,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_of_one_metric_are_read_with_their_labels() {
        let text = "# HELP apiserver_request Requests\n\
            apiserver_request_total{verb=\"LIST\",resource=\"pods\",code=\"200\",client=\"kubectl\"} 2\n\
            apiserver_request_total{verb=\"POST\",resource=\"pods\",code=\"409\",client=\"kmm-tui-engine\"} 5\n\
            apiserver_watch_events_total{resource=\"events\",client=\"kmm-tui\"} 7\n";
        let requests: Vec<Sample<'_>> = samples(text, "apiserver_request_total").collect();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[1].label("code"), Some("409"));
        assert_eq!(requests[1].label("client"), Some("kmm-tui-engine"));
        assert_eq!(requests[1].label("absent"), None);
        assert_eq!(requests[1].value, 5.0);
        let sent: Vec<Sample<'_>> = samples(text, "apiserver_watch_events_total").collect();
        assert_eq!(sent[0].label("resource"), Some("events"));
    }
}
