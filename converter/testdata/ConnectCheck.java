// Reads golden files with Kafka's JsonConverter and writes back what it serializes;
// run by TestKafkaJsonConverter (connect_integration_test.go).
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.data.*;
import java.nio.file.*;
import java.util.*;

public class ConnectCheck {
  public static void main(String[] args) throws Exception {
    JsonConverter kc = new JsonConverter();
    kc.configure(Map.of("schemas.enable", "true", "converter.type", "key"));
    JsonConverter vc = new JsonConverter();
    vc.configure(Map.of("schemas.enable", "true", "converter.type", "value", "decimal.format", "BASE64"));
    Path out = Paths.get(args[0]);
    for (int i = 1; i < args.length; i++) {
      String f = args[i];
      String s = Files.readString(Path.of(f));
      String[] parts = s.split("\n--- value\n");
      String key = parts[0].replace("--- key\n", "");
      String name = Path.of(f).getFileName().toString();
      try {
        byte[] k2 = new byte[0];
        if (!key.equals("(none)")) {
          SchemaAndValue k = kc.toConnectData("t", key.getBytes("UTF-8"));
          ((Struct) k.value()).validate();
          k2 = kc.fromConnectData("t", k.schema(), k.value());
        }
        SchemaAndValue v = vc.toConnectData("t", parts[1].getBytes("UTF-8"));
        Struct st = (Struct) v.value();
        st.validate();
        Object after = st.schema().field("after") != null ? st.get("after") : st.get("ddl");
        System.out.println(name + " OK " + after);
        byte[] v2 = vc.fromConnectData("t", v.schema(), v.value());
        Files.write(out.resolve(name + ".key"), k2);
        Files.write(out.resolve(name + ".value"), v2);
      } catch (Exception e) {
        System.out.println(name + " FAIL " + e);
      }
    }
  }
}
