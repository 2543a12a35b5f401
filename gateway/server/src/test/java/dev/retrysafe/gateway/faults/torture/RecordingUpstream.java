package dev.retrysafe.gateway.faults.torture;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The upstream on a raw socket, one thread per connection, keep-alive as the gateway's pool likes it. It logs every
 * request it received whole, with its Idempotency-Key and the exact body bytes, and answers each key as told:
 * normally, slowly, with a reset, never, with half a response, or with a 503 the gateway releases the key on. It also
 * answers the route's reconciliation lookups ({@value #LOOKUP_PATH}{key}) truthfully, as a backend that keeps its
 * writes would: 200 with the answer it gave (or began to give) for a key whose request it received and took, 404 for
 * a key it never received or answered 503 to. A request whose answer broke (reset, never answered, cut short) was
 * still received whole and taken: a backend has that write, so its lookup finds it, with the answer it produced.
 * The reconciling route's lookups ({@value #LOOKUP_PATH}secured/{key}) are answered only with its bearer token
 * ({@link RouteKind#LOOKUP_TOKEN}), 401 without it; that route's keys may be dropped: the head read, the connection
 * closed, the body never read nor answered ({@link UpstreamFault#DROP}). On the process-tracking route a taken
 * write is answered 202 naming a process of its own, whose status ({@link RouteKind#PROCESS_PATH}{id}) is PENDING
 * until the key's plan ends it (after so many polls) or {@link #endProcesses} ends every one.
 */
final class RecordingUpstream implements AutoCloseable {
    static final int RELEASED_STATUS = 503;
    static final String LOOKUP_PATH = "/torture-lookups/";
    static final int FOUND_STATUS = 200;
    static final int NOT_FOUND_STATUS = 404;
    static final int UNAUTHORIZED_STATUS = 401;
    /** Names the exchange of a request sent without an Idempotency-Key. */
    static final String EXCHANGE_HEADER = "X-Torture-Exchange";

    /**
     * One lookup of a key by the gateway's reconciler, when it arrived ({@code System.nanoTime}) and its answer;
     * {@code secured}: on the path that wants the bearer token.
     */
    record Lookup(String key, long atNanos, int status, boolean secured) {
    }

    /** A request of the key dropped before its body was read, when ({@code System.nanoTime}). */
    record Drop(String key, long atNanos) {
    }

    /** One status read of a process; {@code known}: a process the upstream named in a 202. */
    record Poll(String processId, long atNanos, String status, boolean known) {
    }

    /** How a key's processes end: after so many polls (0: only at {@link #endProcesses}), with which status. */
    record ProcessPlan(int endAfterPolls, String endStatus) {
        static final ProcessPlan AT_THE_END = new ProcessPlan(0, "COMPLETED");
    }

    /** A process the upstream began for one receipt of the process-tracking route. */
    static final class Process {
        final String id;
        final String key;
        final ProcessPlan plan;
        int polls;
        /** The terminal status once a poll reported it, else null. */
        volatile String reportedEnd;

        Process(String id, String key, ProcessPlan plan) {
            this.id = id;
            this.key = key;
            this.plan = plan;
        }
    }

    /** One request the upstream received whole; {@code answeredStatus} is set once its answer was fully written. */
    static final class Receipt {
        final int id;
        final String key;
        final RouteKind route;
        /** It came without an Idempotency-Key (its key is the {@value #EXCHANGE_HEADER} header's). */
        final boolean keyless;
        final byte[] body;
        final UpstreamFault fault;
        /** The process its 202 names (the process-tracking route), else null. */
        final String processId;
        final byte[] responseBody;
        final long receivedNanos = System.nanoTime();
        volatile int answeredStatus;

        Receipt(int id, String key, RouteKind route, boolean keyless, byte[] body, UpstreamFault fault) {
            this.id = id;
            this.key = key;
            this.route = route;
            this.keyless = keyless;
            this.body = body;
            this.fault = fault;
            this.processId = route == RouteKind.PROCESS ? "p-" + id : null;
            this.responseBody = HttpMessage.ascii("{" + (processId == null ? ""
                    : "\"processId\":\"" + processId + "\",\"status\":\"PENDING\",") + "\"receipt\":" + id
                    + ",\"key\":\"" + key + "\"}");
        }

        /** The upstream took the write: everything but its 503, which says it did not. */
        boolean taken() {
            return fault != UpstreamFault.UNAVAILABLE;
        }

        /** Its 2xx answer was written whole. */
        boolean acknowledged() {
            return answeredStatus >= 200 && answeredStatus < 300;
        }
    }

    private final ServerSocket server;
    private final Duration slowAnswer;
    private final Map<String, UpstreamFault> faults = new ConcurrentHashMap<>();
    private final Map<String, ProcessPlan> processPlans = new ConcurrentHashMap<>();
    private final Map<String, Process> processes = new ConcurrentHashMap<>();
    private final Queue<Receipt> receipts = new ConcurrentLinkedQueue<>();
    private final Queue<Lookup> lookups = new ConcurrentLinkedQueue<>();
    private final Queue<Drop> drops = new ConcurrentLinkedQueue<>();
    private final Queue<Poll> polls = new ConcurrentLinkedQueue<>();
    private volatile boolean processesEnded;
    private final List<Socket> open = new CopyOnWriteArrayList<>();
    private final AtomicInteger ids = new AtomicInteger();

    /** @param slowAnswer how long {@link UpstreamFault#SLOW} waits before answering (below the response timeout) */
    RecordingUpstream(Duration slowAnswer) throws IOException {
        this.slowAnswer = slowAnswer;
        server = new ServerSocket(0, 200, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(this::acceptLoop, "recording-upstream");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port() {
        return server.getLocalPort();
    }

    /** Set before the key's first request is sent. Unknown keys are answered normally. */
    void answer(String key, UpstreamFault fault) {
        faults.put(key, fault);
    }

    /** How the processes of the key's 202s end; set before its first request. Unset: at {@link #endProcesses}. */
    void plan(String key, ProcessPlan plan) {
        processPlans.put(key, plan);
    }

    /** From now on every process's status is terminal (its plan's status). */
    void endProcesses() {
        processesEnded = true;
    }

    List<Drop> drops() {
        return new ArrayList<>(drops);
    }

    List<Poll> polls() {
        return new ArrayList<>(polls);
    }

    Map<String, Process> processes() {
        return Map.copyOf(processes);
    }

    List<Receipt> receipts() {
        return new ArrayList<>(receipts);
    }

    List<Lookup> lookups() {
        return new ArrayList<>(lookups);
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                Socket socket = server.accept();
                open.add(socket);
                Thread handler = new Thread(() -> serve(socket), "recording-upstream-conn");
                handler.setDaemon(true);
                handler.start();
            } catch (IOException closed) {
                return;
            }
        }
    }

    private void serve(Socket socket) {
        try (socket) {
            InputStream in = socket.getInputStream();
            OutputStream out = socket.getOutputStream();
            HttpMessage head;
            while ((head = HttpMessage.readHead(in)) != null) {
                String target = head.startLine().split(" ")[1];
                if (head.startLine().startsWith("GET ")) {
                    HttpMessage read = head.withBody(in, false);
                    if (target.startsWith(LOOKUP_PATH + "secured/")) {
                        lookUp(out, target.substring(LOOKUP_PATH.length() + "secured/".length()), read, true);
                    } else if (target.startsWith(LOOKUP_PATH)) {
                        lookUp(out, target.substring(LOOKUP_PATH.length()), read, false);
                    } else {
                        status(out, target.substring(RouteKind.PROCESS_PATH.length()));
                    }
                    continue;
                }
                String idempotencyKey = head.header("Idempotency-Key");
                String key = idempotencyKey != null ? idempotencyKey : head.header(EXCHANGE_HEADER);
                UpstreamFault fault = key == null ? UpstreamFault.NORMAL : faults.getOrDefault(key, UpstreamFault.NORMAL);
                if (fault == UpstreamFault.DROP) {
                    drops.add(new Drop(key, System.nanoTime()));
                    return; // closed with its body unread: the write never happened
                }
                HttpMessage request = head.withBody(in, false);
                RouteKind route = RouteKind.ofPath(target);
                Receipt receipt = new Receipt(ids.incrementAndGet(), key, route == null ? RouteKind.ONBOARDING : route,
                        idempotencyKey == null, request.body(), fault);
                if (receipt.processId != null) {
                    processes.put(receipt.processId, new Process(receipt.processId, key,
                            processPlans.getOrDefault(key, ProcessPlan.AT_THE_END)));
                }
                receipts.add(receipt);
                if (!answer(socket, in, out, receipt)) {
                    return;
                }
            }
        } catch (IOException | InterruptedException gatewayHungUp) {
            // the gateway closed or reset its side: the receipts so far are logged
        } finally {
            open.remove(socket);
        }
    }

    /**
     * The key's latest request the upstream took, by its receipt: a truthful answer, never faulted; on the secured
     * path only to a lookup with the bearer token, 401 otherwise.
     */
    private void lookUp(OutputStream out, String key, HttpMessage request, boolean secured) throws IOException {
        long at = System.nanoTime();
        if (secured && !("Bearer " + RouteKind.LOOKUP_TOKEN).equals(request.header("Authorization"))) {
            lookups.add(new Lookup(key, at, UNAUTHORIZED_STATUS, true));
            write(out, UNAUTHORIZED_STATUS, HttpMessage.ascii("{\"error\":\"unauthorized\"}"));
            return;
        }
        Receipt taken = null;
        for (Receipt receipt : receipts) {
            if (key.equals(receipt.key) && receipt.taken()) {
                taken = receipt;
            }
        }
        int status = taken == null ? NOT_FOUND_STATUS : FOUND_STATUS;
        lookups.add(new Lookup(key, at, status, secured));
        write(out, status, taken == null ? new byte[0] : taken.responseBody);
    }

    /** A process's status: PENDING until its plan or {@link #endProcesses} ends it; 404 for one never named. */
    private void status(OutputStream out, String processId) throws IOException {
        Process process = processes.get(processId);
        if (process == null) {
            polls.add(new Poll(processId, System.nanoTime(), null, false));
            write(out, NOT_FOUND_STATUS, new byte[0]);
            return;
        }
        String status;
        synchronized (process) {
            process.polls++;
            boolean ended = processesEnded || process.reportedEnd != null
                    || (process.plan.endAfterPolls() > 0 && process.polls >= process.plan.endAfterPolls());
            status = ended ? process.plan.endStatus() : "PENDING";
            if (ended) {
                process.reportedEnd = status;
            }
        }
        polls.add(new Poll(processId, System.nanoTime(), status, true));
        write(out, FOUND_STATUS, HttpMessage.ascii("{\"processId\":\"" + processId + "\",\"status\":\"" + status
                + "\"}"));
    }

    private static void write(OutputStream out, int status, byte[] body) throws IOException {
        out.write(HttpMessage.ascii("HTTP/1.1 " + status + " Whatever\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + body.length + "\r\n\r\n"));
        out.write(body);
        out.flush();
    }

    /** @return whether the connection stays usable for another request */
    private boolean answer(Socket socket, InputStream in, OutputStream out, Receipt receipt)
            throws IOException, InterruptedException {
        switch (receipt.fault) {
            case RESET -> {
                socket.setSoLinger(true, 0); // close() now sends RST
                return false;
            }
            case TIMEOUT -> {
                while (in.read() >= 0) {
                    // silent until the gateway gives up and closes
                }
                return false;
            }
            case PARTIAL -> {
                out.write(HttpMessage.ascii("HTTP/1.1 " + receipt.route.successStatus + " Whatever\r\nContent-Type: application/json\r\n"
                        + "Content-Length: " + (receipt.responseBody.length + 100) + "\r\n\r\n"));
                out.write(receipt.responseBody);
                out.flush();
                return false;
            }
            case SLOW -> Thread.sleep(slowAnswer.toMillis()); // fault injection: an upstream that takes its time
            default -> {
            }
        }
        int status = receipt.fault == UpstreamFault.UNAVAILABLE ? RELEASED_STATUS : receipt.route.successStatus;
        out.write(HttpMessage.ascii("HTTP/1.1 " + status + " Whatever\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + receipt.responseBody.length + "\r\n\r\n"));
        out.write(receipt.responseBody);
        out.flush();
        receipt.answeredStatus = status;
        return true;
    }

    @Override
    public void close() throws IOException {
        server.close();
        for (Socket socket : open) {
            socket.close();
        }
    }
}
