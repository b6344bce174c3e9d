"""A `zulip-run-bot` bot that keeps a counter in bot storage
(`bot_handler.storage`) and answers each message with its new value."""


class StorageCounterHandler:
    def usage(self) -> str:
        return "Counts the messages it gets, in bot storage."

    def handle_message(self, message, bot_handler) -> None:
        storage = bot_handler.storage
        try:
            count = storage.get("count")
        except KeyError:
            count = 0
        count += 1
        storage.put("count", count)
        bot_handler.send_reply(message, f"count: {count}")


handler_class = StorageCounterHandler
