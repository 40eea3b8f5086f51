/*
 * loopback-bind: an LD_PRELOAD shim that turns every bind() to the wildcard
 * address (0.0.0.0 or ::) into a bind to loopback (127.0.0.1, or
 * ::ffff:127.0.0.1 for dual-stack IPv6 sockets).
 *
 * Why: RocketMQ's broker binds its replication (HA) port, listenPort+1, to
 * the wildcard address and has no setting for it. Our rule is that every
 * server listens on 127.0.0.1 only, so scripts/servers.sh starts the Java
 * servers with this shim. Built by scripts/servers.sh with the system cc.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
	static bind_fn real;
	if (!real)
		real = (bind_fn)dlsym(RTLD_NEXT, "bind");
	if (addr && addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		struct sockaddr_in in4;
		memcpy(&in4, addr, sizeof in4);
		if (in4.sin_addr.s_addr == htonl(INADDR_ANY)) {
			in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			return real(fd, (const struct sockaddr *)&in4, sizeof in4);
		}
	} else if (addr && addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 in6;
		memcpy(&in6, addr, sizeof in6);
		if (memcmp(&in6.sin6_addr, &in6addr_any, sizeof in6addr_any) == 0) {
			static const unsigned char mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
			memcpy(&in6.sin6_addr, mapped, sizeof mapped);
			return real(fd, (const struct sockaddr *)&in6, sizeof in6);
		}
	}
	return real(fd, addr, len);
}
