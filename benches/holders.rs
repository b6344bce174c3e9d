//! Who holds an old message (`State::message_holders`: the audience of a
//! reaction, an edit or a deletion), in a realm of 10,000 users, with no
//! holder hints (as for a message older than the hints' window): a
//! channel message takes the scan of every user's rows; a direct message
//! asks only its participants.
//!
//! Run: `cargo bench --bench holders`

use std::time::Duration;

use natter::testkit;

use criterion::{criterion_group, criterion_main, Criterion};

use natter::mutation::{Mutation, NewMessage};
use natter::state::{Destination, IdKind, Message, MessageId, MessageParts, RecipientId, State};

const USERS: u64 = 10_000;

fn bench(c: &mut Criterion) {
    let state = testkit::bench_state(1, USERS, &mut |_| {});
    let channel_message = MessageId(state.ids.peek(IdKind::Message) - 1);
    let sender = state.messages.get(&channel_message).unwrap().sender;
    let other = state.users.collect_sorted(|id, _| *id != sender)[0].0;
    let mut participants = vec![sender, other];
    participants.sort();
    let dm = MessageId(state.ids.peek(IdKind::Message));
    let message = Message::from(MessageParts {
        id: dm,
        realm: state.messages.get(&channel_message).unwrap().realm,
        sender,
        recipient: RecipientId(state.ids.peek(IdKind::Recipient)),
        destination: Destination::Direct { participants: participants.into() },
        content: "hello".into(),
        rendered_content: "<p>hello</p>".into(),
        timestamp: 1_700_000_000,
        client: "bench".into(),
        is_me_message: false,
    });
    let send = Mutation::SendMessage(NewMessage {
        message: std::sync::Arc::new(message),
        read_by_sender: true,
        mentioned: Vec::new(),
        channel_wildcard: false,
        topic_wildcard: Vec::new(),
    });
    natter::apply::apply(&state, state.applied_seq() + 1, &send);
    // Back from an image: no hints, as for messages before the window.
    let state = State::from_image(state.image());
    let mut group = c.benchmark_group("holders");
    group.sample_size(20).measurement_time(Duration::from_secs(3));
    for (name, id, holders) in
        [("channel message, scan", channel_message, USERS as usize), ("direct message", dm, 2)]
    {
        let message = state.messages.get(&id).unwrap();
        assert_eq!(state.message_holders(&message).len(), holders, "{name}");
        group.bench_function(format!("{name}, {USERS} users"), |b| {
            b.iter(|| state.message_holders(&message))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
