"""The quickstart in marimo: an image, a video and a voice in live task views.

Run it with ``marimo run notebooks/marimo_quickstart.py`` (or ``marimo edit``).
marimo renders anywidget front-ends, not core ipywidgets: the task view is an
anywidget and works here; the generated forms (core ipywidgets) do not, so the
payloads are written as dicts. With no gateway configured, ``gw.Client()``
starts the local simulator and every view says "simulated".
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo

    import genwidgets as gw

    TaskView = gw.TaskView

    mo.md(
        "# Quickstart in marimo\n\n"
        "Each cell below submits a task and shows its **task view**: status, elapsed "
        "time (counted in your browser), a Cancel button while it runs, and the outputs "
        "when it ends."
    )
    return TaskView, gw


@app.cell
def _(gw):
    client = gw.Client()
    return (client,)


@app.cell
def _(TaskView, client):
    # The view shows at once and follows the task (no waiting for the result first).
    image = client.submit("genW2.5-t2i-preview", {"prompt": "a red kite over green hills", "n": 1})
    TaskView(image)
    return


@app.cell
def _(TaskView, client):
    video = client.submit(
        "vidVq2-text2video",
        {"prompt": "a red kite climbing into a windy sky", "duration": 2, "resolution": "540p"},
    )
    TaskView(video)
    return


@app.cell
def _(TaskView, client):
    voice = client.submit("speechM-02-turbo", {"text": "Hello from marimo and the simulator."})
    TaskView(voice)
    return


@app.cell
def _(client, gw):
    # The prompt lab's grid is an anywidget too: its cells fill in as the tasks end.
    gw.grid(
        "genW2.5-t2i-preview",
        {"prompt": "a fox in the snow", "n": 1},
        x=("seed", [1, 2]),
        client=client,
    )
    return


if __name__ == "__main__":
    app.run()
