//! The unauthenticated budget's book-keeping: which connections are in it, from which peer, in what order they
//! came, and whether each has spoken yet; and which to evict when a new one does not fit.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::os::fd::RawFd;

use tokio_util::sync::CancellationToken;

use crate::limits::UnauthenticatedBudget;

/// The unauthenticated connections of one listener.
#[derive(Debug)]
pub(crate) struct Budget {
    sizes: UnauthenticatedBudget,
    next: u64,
    /// By order of acceptance: the first is the oldest.
    members: BTreeMap<u64, Member>,
    evicted: u64,
    /// Whether the client of a socket has sent bytes not read yet: asked of a silent connection before it is
    /// evicted, since its own task may not have run since its first bytes came.
    heard: fn(RawFd) -> bool,
}

#[derive(Debug)]
struct Member {
    peer: IpAddr,
    /// The connection's socket, for `heard`. Its number may be reused once the socket closes, before the member
    /// leaves: the worst a stale number does is misjudge one connection as having spoken.
    socket: RawFd,
    spoke: bool,
    evict: CancellationToken,
}

impl Budget {
    /// An empty budget of `sizes` (at least one connection each), asking `heard` whether a socket has spoken.
    pub(crate) fn new(sizes: UnauthenticatedBudget, heard: fn(RawFd) -> bool) -> Self {
        Self {
            sizes: UnauthenticatedBudget {
                total: sizes.total.max(1),
                per_peer: sizes.per_peer.max(1),
            },
            next: 0,
            members: BTreeMap::new(),
            evicted: 0,
            heard,
        }
    }

    /// Take in the connection on `socket` from `peer`, which `evict` closes: when its peer has used its share,
    /// that peer's victim makes room, else when the budget is full, the victim of all. Returns its number in the
    /// budget.
    pub(crate) fn admit(&mut self, peer: IpAddr, socket: RawFd, evict: CancellationToken) -> u64 {
        let of_peer = self.members.values().filter(|m| m.peer == peer).count();
        let victim = if of_peer >= self.sizes.per_peer {
            self.victim(|m| m.peer == peer)
        } else if self.members.len() >= self.sizes.total {
            self.victim(|_| true)
        } else {
            None
        };
        if let Some(victim) = victim.and_then(|id| self.members.remove(&id)) {
            victim.evict.cancel();
            self.evicted += 1;
        }
        let id = self.next;
        self.next += 1;
        let spoke = (self.heard)(socket);
        self.members.insert(
            id,
            Member {
                peer,
                socket,
                spoke,
                evict,
            },
        );
        id
    }

    /// The connection `id` has received its first bytes: evicted only once no silent connection is left to evict.
    pub(crate) fn spoke(&mut self, id: u64) {
        if let Some(member) = self.members.get_mut(&id) {
            member.spoke = true;
        }
    }

    /// The connection `id` has left the budget: closed or authenticated.
    pub(crate) fn leave(&mut self, id: u64) {
        self.members.remove(&id);
    }

    /// Connections in the budget now.
    pub(crate) fn len(&self) -> usize {
        self.members.len()
    }

    /// Connections evicted so far.
    pub(crate) fn evicted(&self) -> u64 {
        self.evicted
    }

    /// The connection to evict among those `eligible`: a silent one before one that spoke (a client that speaks
    /// first at once is a client trying to be served), the oldest first.
    fn victim(&mut self, eligible: impl Fn(&Member) -> bool) -> Option<u64> {
        let heard = self.heard;
        for (id, member) in self.members.iter_mut().filter(|(_, m)| eligible(m)) {
            if !member.spoke {
                if heard(member.socket) {
                    member.spoke = true;
                } else {
                    return Some(*id);
                }
            }
        }
        self.members
            .iter()
            .find(|(_, member)| eligible(member))
            .map(|(id, _)| *id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const TWO: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

    /// Sockets numbered from here have spoken; below, they are silent.
    const SPEAKING: RawFd = 1000;

    fn budget(total: usize, per_peer: usize) -> Budget {
        Budget::new(UnauthenticatedBudget { total, per_peer }, |socket| {
            socket >= SPEAKING
        })
    }

    fn admitted(budget: &mut Budget, peer: IpAddr) -> CancellationToken {
        let token = CancellationToken::new();
        budget.admit(peer, 0, token.clone());
        token
    }

    #[test]
    fn a_full_budget_evicts_its_oldest_connection() {
        let mut budget = budget(3, 3);
        let first = admitted(&mut budget, ONE);
        let second = admitted(&mut budget, TWO);
        admitted(&mut budget, ONE);
        assert!(!first.is_cancelled());
        admitted(&mut budget, TWO);
        assert!(first.is_cancelled(), "the oldest makes room");
        assert!(!second.is_cancelled());
        assert_eq!((budget.len(), budget.evicted()), (3, 1));
    }

    #[test]
    fn a_peer_over_its_share_evicts_its_own_oldest() {
        let mut budget = budget(10, 2);
        let other = admitted(&mut budget, TWO);
        let first = admitted(&mut budget, ONE);
        let second = admitted(&mut budget, ONE);
        admitted(&mut budget, ONE);
        assert!(first.is_cancelled(), "the peer's oldest makes room");
        assert!(
            !other.is_cancelled(),
            "another peer's older connection stays"
        );
        assert!(!second.is_cancelled());
    }

    #[test]
    fn silent_connections_are_evicted_before_those_that_spoke() {
        let mut budget = budget(3, 3);
        let token = CancellationToken::new();
        budget.admit(ONE, SPEAKING, token.clone());
        let silent: Vec<CancellationToken> = (0..2).map(|_| admitted(&mut budget, ONE)).collect();
        let flood: Vec<CancellationToken> = (0..100).map(|_| admitted(&mut budget, ONE)).collect();
        assert!(!token.is_cancelled(), "the client that spoke stays");
        assert!(silent.iter().all(CancellationToken::is_cancelled));
        assert_eq!(flood.iter().filter(|t| !t.is_cancelled()).count(), 2);
    }

    #[test]
    fn leaving_frees_room() {
        let mut budget = budget(1, 1);
        let token = CancellationToken::new();
        let id = budget.admit(ONE, 0, token.clone());
        budget.leave(id);
        let next = admitted(&mut budget, ONE);
        assert!(!token.is_cancelled() && !next.is_cancelled());
        assert_eq!(budget.evicted(), 0);
    }
}
