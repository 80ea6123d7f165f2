package io.mockbroker.jvmtools;

import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import io.mockbroker.jvmjson.Json;

import org.apache.kafka.common.utils.internals.Exit;

/**
 * Runs Kafka's command-line tools (kafka-topics, kafka-configs, ...) by their main classes,
 * many invocations in one JVM, so that a test suite pays the JVM start once.
 *
 * <p>Protocol: one JSON object per line on standard input,
 * {@code {"main": "org.apache.kafka.tools.TopicCommand", "args": [...], "stdin": "..."}}
 * ({@code stdin} optional: what the tool reads from System.in). For each, one JSON line on
 * standard output: {@code {"exit": N, "stdout": "...", "stderr": "...", "millis": M}}. The
 * tool's System.out and System.err are captured for the call; its exit code is the code it
 * passed to Kafka's {@code Exit.exit}/{@code Exit.halt} (caught: the JVM goes on), else 0
 * when main returned, else 1 when main threw (the exception is appended to stderr).
 * What a tool prints after it called Exit.exit (while its stack unwinds) is dropped, as a
 * real exit would never print it. Shutdown hooks the tools register through {@code Exit.addShutdownHook} are dropped. The
 * runner ends at the end of its input.
 */
public final class ToolRunner {

    /** Thrown by the exit procedure: unwinds a tool's main once it called Exit.exit. */
    static final class ToolExit extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final int code;

        ToolExit(int code) {
            super("Exit.exit(" + code + ")", null, false, false);
            this.code = code;
        }
    }

    /** The first code the running tool passed to Exit.exit/halt, or null. */
    private static volatile Integer exitCode;
    /** The running tool's captured output and error streams. */
    private static volatile ByteArrayOutputStream capturedOut;
    private static volatile ByteArrayOutputStream capturedErr;
    /** How much the tool had printed when it called Exit.exit (a real exit ends there). */
    private static volatile int outAtExit;
    private static volatile int errAtExit;

    private ToolRunner() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream protocolOut = new PrintStream(
            new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
        PrintStream originalErr = System.err;
        InputStream originalIn = System.in;
        Exit.Procedure recordAndUnwind = (code, message) -> {
            if (exitCode == null) {
                System.out.flush();
                System.err.flush();
                exitCode = code;
                outAtExit = capturedOut.size();
                errAtExit = capturedErr.size();
            }
            throw new ToolExit(code);
        };
        Exit.setExitProcedure(recordAndUnwind);
        Exit.setHaltProcedure(recordAndUnwind);
        Exit.setShutdownHookAdder((name, runnable) -> { });
        BufferedReader requests = new BufferedReader(
            new InputStreamReader(originalIn, StandardCharsets.UTF_8));
        String line;
        while ((line = requests.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            Map<String, Object> request = MiniJson.parseObject(line);
            String result = run(request);
            System.setOut(protocolOut);
            System.setErr(originalErr);
            System.setIn(originalIn);
            protocolOut.println(result);
            protocolOut.flush();
        }
    }

    private static String run(Map<String, Object> request) {
        String mainClass = (String) request.get("main");
        List<String> toolArgs = new ArrayList<>();
        for (Object arg : (List<?>) request.get("args")) {
            toolArgs.add((String) arg);
        }
        Object stdin = request.get("stdin");
        byte[] input = stdin == null ? new byte[0] : ((String) stdin).getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream toolOut = new PrintStream(out, true, StandardCharsets.UTF_8);
        PrintStream toolErr = new PrintStream(err, true, StandardCharsets.UTF_8);
        capturedOut = out;
        capturedErr = err;
        System.setOut(toolOut);
        System.setErr(toolErr);
        System.setIn(new ByteArrayInputStream(input));
        exitCode = null;
        int code = 0;
        long start = System.nanoTime();
        try {
            Method main = Class.forName(mainClass).getMethod("main", String[].class);
            main.invoke(null, (Object) toolArgs.toArray(new String[0]));
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (!(cause instanceof ToolExit) && exitCode == null) {
                code = 1;
                cause.printStackTrace(toolErr);
            }
        } catch (ReflectiveOperationException e) {
            code = 1;
            e.printStackTrace(toolErr);
        }
        toolOut.flush();
        toolErr.flush();
        String stdout = out.toString(StandardCharsets.UTF_8);
        String stderr = err.toString(StandardCharsets.UTF_8);
        if (exitCode != null) {
            // what the tool printed while unwinding from Exit.exit never shows in a real run
            code = exitCode;
            stdout = new String(out.toByteArray(), 0, outAtExit, StandardCharsets.UTF_8);
            stderr = new String(err.toByteArray(), 0, errAtExit, StandardCharsets.UTF_8);
        }
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("exit", code);
        result.put("stdout", stdout);
        result.put("stderr", stderr);
        result.put("millis", (System.nanoTime() - start) / 1_000_000);
        return Json.write(result);
    }
}
