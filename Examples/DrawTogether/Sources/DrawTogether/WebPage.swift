import Foundation
import Hummingbird
import HummingbirdWebSocket

/// The page (`GET /`) and its WebSocket (`/ws`): the page draws what `Canvas` sends and sends back what the person
/// does.
enum WebPage {
    static func router(canvas: Canvas, coordinator: Coordinator) -> Router<BasicWebSocketRequestContext> {
        let router = Router(context: BasicWebSocketRequestContext.self)
        router.get("/") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: html)))
        }
        router.ws("/ws") { inbound, outbound, _ in
            let (id, updates) = await canvas.connect()
            defer { Task { await canvas.disconnect(id) } }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await update in updates { try await outbound.write(.text(update)) }
                }
                group.addTask {
                    for try await message in inbound.messages(maxSize: 16 << 20) {
                        if case .text(let text) = message { await coordinator.handle(text) }
                    }
                }
                // Either side ending (the page closed) ends both.
                try await group.next()
                group.cancelAll()
            }
        }
        return router
    }

    /// The whole page: a canvas, the participants, an Invite button. `window.canvasState` exposes what it shows
    /// (the browser test reads it).
    static let html = #"""
        <!doctype html>
        <html>
        <head>
        <meta charset="utf-8">
        <title>Draw Together</title>
        <style>
          body { font-family: system-ui, sans-serif; margin: 0; display: flex; height: 100vh; }
          main { flex: 1; position: relative; }
          canvas { background: #fffdf6; display: block; cursor: crosshair; }
          aside { width: 220px; padding: 12px; background: #f2f0ea; border-left: 1px solid #ddd; overflow: auto; }
          li { list-style: none; margin: 4px 0; }
          .dot { display: inline-block; width: 10px; height: 10px; border-radius: 5px; margin-right: 6px; }
          #ticket { word-break: break-all; font-size: 10px; display: none; }
          button { margin-top: 12px; }
        </style>
        </head>
        <body>
        <main><canvas id="canvas" width="800" height="600"></canvas></main>
        <aside>
          <h3>Draw Together</h3>
          <ul id="people"></ul>
          <button id="invite">Invite</button>
          <p id="ticket"></p>
          <p style="font-size: 12px; color: #666">Draw with the mouse. Drop an image on the canvas to share it.</p>
        </aside>
        <script>
        const state = window.canvasState = { me: null, ticket: null, strokes: {}, order: [], images: {}, people: [],
                                             cursors: {}, connected: false };
        const canvas = document.getElementById('canvas');
        const ctx = canvas.getContext('2d');
        const loaded = {};
        const socket = new WebSocket(`ws://${location.host}/ws`);
        socket.onopen = () => { state.connected = true; };
        socket.onmessage = (event) => {
          const update = JSON.parse(event.data);
          const body = update.body;
          if (update.type === 'snapshot') {
            state.me = body.me; state.ticket = body.ticket; state.people = body.people;
            for (const stroke of body.strokes) putStroke(stroke);
            for (const image of body.images) putImage(image);
            showPeople();
          } else if (update.type === 'stroke') { putStroke(body); }
          else if (update.type === 'image') { putImage(body); }
          else if (update.type === 'people') { state.people = body; showPeople(); }
          else if (update.type === 'cursor') { state.cursors[body.person.id] = body; }
          draw();
        };
        function putStroke(stroke) {
          if (!state.strokes[stroke.id]) state.order.push(stroke.id);
          state.strokes[stroke.id] = stroke;
        }
        function putImage(image) {
          state.images[image.id] = image;
          const element = new Image();
          element.onload = () => { loaded[image.id] = element; draw(); };
          element.src = `data:${image.mimeType};base64,${image.data}`;
        }
        function showPeople() {
          document.getElementById('people').innerHTML = state.people.map((person) =>
            `<li><span class="dot" style="background:${person.color}"></span>${person.name}` +
            `${state.me && person.id === state.me.id ? ' (you)' : ''}</li>`).join('');
        }
        function draw() {
          ctx.clearRect(0, 0, canvas.width, canvas.height);
          for (const image of Object.values(state.images)) {
            const element = loaded[image.id];
            if (!element) continue;
            const scale = Math.min(1, 240 / Math.max(element.width, element.height));
            ctx.drawImage(element, image.point.x, image.point.y, element.width * scale, element.height * scale);
          }
          ctx.lineWidth = 4; ctx.lineCap = 'round'; ctx.lineJoin = 'round';
          for (const id of state.order) {
            const stroke = state.strokes[id];
            ctx.strokeStyle = stroke.color;
            ctx.beginPath();
            stroke.points.forEach((p, i) => i === 0 ? ctx.moveTo(p.x, p.y) : ctx.lineTo(p.x, p.y));
            if (stroke.points.length === 1) ctx.lineTo(stroke.points[0].x + 0.1, stroke.points[0].y);
            ctx.stroke();
          }
          for (const cursor of Object.values(state.cursors)) {
            ctx.fillStyle = cursor.person.color;
            ctx.beginPath(); ctx.arc(cursor.point.x, cursor.point.y, 5, 0, 2 * Math.PI); ctx.fill();
            ctx.fillText(cursor.person.name, cursor.point.x + 8, cursor.point.y - 8);
          }
        }
        function send(command) { if (state.connected) socket.send(JSON.stringify(command)); }
        function at(event) {
          const box = canvas.getBoundingClientRect();
          return { x: event.clientX - box.left, y: event.clientY - box.top };
        }
        let current = null;
        canvas.addEventListener('mousedown', (event) => {
          current = crypto.randomUUID().toUpperCase();
          send({ type: 'stroke', id: current, point: at(event) });
        });
        canvas.addEventListener('mousemove', (event) => {
          send({ type: 'cursor', point: at(event) });
          if (current) send({ type: 'stroke', id: current, point: at(event) });
        });
        window.addEventListener('mouseup', () => { current = null; });
        canvas.addEventListener('dragover', (event) => event.preventDefault());
        canvas.addEventListener('drop', (event) => {
          event.preventDefault();
          const file = event.dataTransfer.files[0];
          if (file) window.shareImage(file, at(event));
        });
        // Also what the drop handler calls, so scripts can share an image without a drag.
        window.shareImage = function shareImage(file, point) {
          const reader = new FileReader();
          reader.onload = () => {
            const data = reader.result.split(',')[1];
            send({ type: 'image', point, mimeType: file.type || 'image/png', data });
          };
          reader.readAsDataURL(file);
        };
        document.getElementById('invite').addEventListener('click', () => {
          const element = document.getElementById('ticket');
          element.textContent = state.ticket;
          element.style.display = 'block';
        });
        </script>
        </body>
        </html>
        """#
}
