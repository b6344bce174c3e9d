//! A small realm shared by the targets that resolve names and ids: three
//! users (one a guest), a public and a private channel, a user group,
//! channel and direct messages, built once. Each target that includes
//! this module reads only the parts it needs.
#![allow(dead_code)]

use std::sync::OnceLock;

use natter::state::{Flags, Message, Role, User};
use natter::testkit::World;

pub struct Fixture {
    pub world: World,
    pub viewers: Vec<User>,
    pub messages: Vec<std::sync::Arc<Message>>,
    pub flags: Flags,
}

pub fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let mut world = World::new();
        let iago = world.user("", "iago@natter.test", Role::Administrator);
        let hamlet = world.user("", "hamlet@natter.test", Role::Member);
        let guest = world.user("", "polonius@natter.test", Role::Guest);
        let general = world.channel("", "general", false, &[&iago, &hamlet]);
        let secret = world.channel("", "secret", true, &[&iago]);
        world.group("", "support", &[&iago, &hamlet]);
        let ids = [
            world.post(&iago, general.id, "greetings", "hello **world**"),
            world.post(&hamlet, general.id, "✔ resolved", "to be or not to be"),
            world.post(&iago, secret.id, "plans", "secret plans @**hamlet**"),
            world.dm(&hamlet, &[&iago], "a direct message"),
            world.dm(&guest, &[&iago, &hamlet], "a group direct message"),
        ];
        let messages = ids.iter().map(|id| world.message(*id)).collect();
        Fixture { world, viewers: vec![iago, hamlet, guest], messages, flags: Flags(0) }
    })
}
