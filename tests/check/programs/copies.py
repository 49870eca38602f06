import torch

scale = torch.full((4,), 2.0)
acc = torch.zeros(4, device="neuron")
for step in range(5):
    batch = torch.full((4,), float(step))  # a new batch each step: input feeding
    x = batch.to("neuron")
    acc = acc + x * scale.to("neuron")  # the same constant uploaded every step
print(acc.sum().item(), acc.max().item())
