mod socket_peek;
mod socket_read;
mod socket_write;
mod tcp_listener_accept;
mod tcp_stream_connect;
mod udp_recv_from;
mod udp_send_to;

pub use self::socket_peek::SocketPeek;
pub use self::socket_read::SocketRead;
pub use self::socket_write::SocketWrite;
pub use self::tcp_listener_accept::TcpListenerAccept;
pub use self::tcp_stream_connect::TcpStreamConnect;
pub use self::udp_recv_from::UdpRecvFrom;
pub use self::udp_send_to::UdpSendTo;
