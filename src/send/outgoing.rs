//! Which outgoing-webhook bots a message triggers, and the outbox that
//! hands the triggered deliveries to the delivery pool (`outgoing`).
//!
//! A delivery is logged in the same record as the message that triggers
//! it (`BotChange::Queue` in the send's batch), so a crash between the
//! send and the delivery loses nothing: the unfinished deliveries in the
//! state are posted again after the restart. The outbox only wakes the
//! pool; the state is the durable list.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::mutation::{Mutation, NewMessage};
use crate::state::access::can_read_channel;
use crate::state::bots::{BotChange, Delivery, Trigger};
use crate::state::{BotType, Destination, State, User, UserId};

/// The deliveries `new`, sent by `sender` and mentioning `mentioned` by
/// name (not silently), triggers: each active outgoing-webhook bot with a
/// service that receives it as a direct message, or that is mentioned in
/// a channel it can read. Messages sent by bots trigger nothing, so two
/// bots cannot answer each other forever.
pub fn triggered(
    state: &State,
    sender: &User,
    new: &NewMessage,
    mentioned: &[u64],
) -> Vec<Delivery> {
    if sender.is_bot() {
        return Vec::new();
    }
    let message = &new.message;
    let service_bot = |id: UserId| {
        state
            .users
            .get(&id)
            .filter(|u| {
                u.is_active
                    && u.realm == sender.realm
                    && u.bot_type == Some(BotType::OutgoingWebhook)
                    && state.bots.services.contains(&u.id)
            })
            .map(Arc::new)
    };
    let mut out = Vec::new();
    match &message.destination {
        Destination::Channel { channel, .. } => {
            let Some(channel) = state.channels.get(channel) else { return out };
            let mut ids: Vec<u64> = mentioned.to_vec();
            ids.sort_unstable();
            ids.dedup();
            for id in ids {
                if let Some(bot) = service_bot(UserId(id)) {
                    if can_read_channel(&bot, &channel) {
                        out.push(Delivery {
                            message: message.id,
                            bot: bot.id,
                            trigger: Trigger::Mention,
                        });
                    }
                }
            }
        }
        Destination::Direct { participants } => {
            for id in participants.iter().filter(|id| **id != sender.id) {
                if let Some(bot) = service_bot(*id) {
                    out.push(Delivery {
                        message: message.id,
                        bot: bot.id,
                        trigger: Trigger::DirectMessage,
                    });
                }
            }
        }
    }
    out
}

/// The mutation that queues `deliveries` (to log with their message), if
/// any.
pub fn queue(deliveries: &[Delivery]) -> Option<Mutation> {
    (!deliveries.is_empty()).then(|| Mutation::Bot(Box::new(BotChange::Queue(deliveries.to_vec()))))
}

/// The deliveries waiting for the pool (`outgoing`), each with the time
/// it is due and how many attempts failed before. A send pushes onto it
/// and never waits; the pool's threads take the due ones. Not durable:
/// the state's unfinished deliveries are, and fill it again at start-up.
#[derive(Default)]
pub struct Outbox {
    jobs: parking_lot::Mutex<BinaryHeap<Reverse<(Instant, Delivery, u32)>>>,
    ready: parking_lot::Condvar,
}

impl Outbox {
    /// Hands deliveries to the pool, due now.
    pub fn push(&self, deliveries: Vec<Delivery>) {
        if deliveries.is_empty() {
            return;
        }
        let now = Instant::now();
        self.jobs.lock().extend(deliveries.into_iter().map(|d| Reverse((now, d, 0))));
        self.ready.notify_all();
    }

    /// Hands the unfinished deliveries of before a restart to the pool,
    /// due now, each with the tries it has behind it.
    pub fn resume(&self, deliveries: Vec<(Delivery, u32)>) {
        if deliveries.is_empty() {
            return;
        }
        let now = Instant::now();
        self.jobs
            .lock()
            .extend(deliveries.into_iter().map(|(d, failed)| Reverse((now, d, failed))));
        self.ready.notify_all();
    }

    /// Puts a delivery back, due after `delay`, with `failed` attempts
    /// behind it.
    pub fn retry(&self, delivery: Delivery, failed: u32, delay: Duration) {
        self.jobs.lock().push(Reverse((Instant::now() + delay, delivery, failed)));
        self.ready.notify_all();
    }

    /// The next due delivery and its failed attempts, waiting for one (an
    /// OS thread only: this blocks the thread).
    pub fn next(&self) -> (Delivery, u32) {
        let mut jobs = self.jobs.lock();
        loop {
            match jobs.peek() {
                Some(Reverse((due, _, _))) if *due <= Instant::now() => {
                    let Reverse((_, delivery, failed)) = jobs.pop().expect("peeked");
                    return (delivery, failed);
                }
                Some(Reverse((due, _, _))) => {
                    let due = *due;
                    self.ready.wait_until(&mut jobs, due);
                }
                None => self.ready.wait(&mut jobs),
            }
        }
    }

    /// How many deliveries wait (due or not).
    pub fn len(&self) -> usize {
        self.jobs.lock().len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
