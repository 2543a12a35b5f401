package dev.retrysafe.gateway.support;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.Socket;

/** An upstream on a real socket on a random port: one daemon thread per accepted connection. */
public abstract class SocketUpstream {
    private final ServerSocket server;
    private final String name;

    public SocketUpstream(String name) {
        this.name = name;
        try {
            server = new ServerSocket(0);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Thread acceptor = new Thread(this::accept, name);
        acceptor.setDaemon(true);
        acceptor.start();
    }

    public final int port() {
        return server.getLocalPort();
    }

    /** Handles one connection; closing the socket is up to it. */
    abstract void serve(Socket socket);

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket socket = server.accept();
                Thread serve = new Thread(() -> serve(socket), name + "-conn");
                serve.setDaemon(true);
                serve.start();
            } catch (IOException closed) {
                return;
            }
        }
    }
}
